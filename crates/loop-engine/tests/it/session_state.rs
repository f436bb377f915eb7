//! What a session keeps beside its conversation lives and ends with it: the permission
//! settings hosts give, and the workspace files clients read back through its handle.

use std::path::Path;

use loop_engine::permission_settings::normalize;
use serde_json::json;

use crate::support::TestEngine;

#[tokio::test]
async fn permission_settings_start_from_the_cwd_and_end_with_the_session() {
    let env = TestEngine::start().await;
    let first = env.session(json!({"sessionId": "perm-a"})).await;
    assert_eq!(first.handle.with_permissions(|p| p.primary.clone()), normalize(&env.workdir));
    first.handle.with_permissions(|p| p.allow(Path::new("/srv/data")));
    assert!(first.handle.with_permissions(|p| p.within_allowed(Path::new("/srv/data/x"))));

    env.engine.delete("perm-a").await.unwrap();
    let again = env.session(json!({"sessionId": "perm-a"})).await;
    assert!(!again.handle.with_permissions(|p| p.within_allowed(Path::new("/srv/data/x"))));
}

#[tokio::test]
async fn workspace_files_are_read_back_through_the_handle() {
    let env = TestEngine::start().await;
    let s = env.session(json!({})).await;
    s.handle.write_workspace_file("notes/a.txt".into(), "hello".into()).await.unwrap();
    assert_eq!(s.handle.list_workspace_files().await.unwrap(), ["notes/a.txt"]);
    assert_eq!(s.handle.read_workspace_file("notes/a.txt").await.unwrap(), "hello");
    assert!(s.handle.files_dir().join("notes/a.txt").is_file());
    assert!(s.handle.files_dir().starts_with(s.handle.workspace_path()));
    assert!(s.handle.list_checkpoints().await.unwrap().is_empty());
    assert_eq!(s.handle.read_checkpoint(1).await.unwrap(), None);
}
