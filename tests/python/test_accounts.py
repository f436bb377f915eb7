"""Issue 11: `account.getCurrentAuth` / `login` / `getAllUsers` / `logout` through the official
SDK. A server started without a token signs in at run time, and its sessions then reach the
model with the signed-in account's token."""

from __future__ import annotations

import pytest

from copilot.generated.rpc import AccountLoginRequest, AccountLogoutRequest
from copilot.session import PermissionHandler

from conftest import Ctx

APPROVE = PermissionHandler.approve_all


def _set_user(ctx: Ctx, token: str, response: dict) -> None:
    ctx.fake._call("POST", "/_fake/user", {"token": token, "response": response})


async def test_login_switches_the_model_token_and_logout_signs_out(ctx: Ctx, make_client):
    _set_user(ctx, "token-of-ann", {"login": "ann", "copilot_plan": "individual_pro", "endpoints": {"api": ctx.fake.url}})
    client = make_client(github_token=None)
    await client.start()

    assert (await client.rpc.account.get_current_auth()).auth_info is None
    assert await client.rpc.account.get_all_users() == []

    # Without `login`, the user the token belongs to is looked up.
    result = await client.rpc.account.login(AccountLoginRequest(host="https://github.com", token="token-of-ann"))
    assert result.stored_in_vault is False

    current = (await client.rpc.account.get_current_auth()).to_dict()["authInfo"]
    assert (current["type"], current["host"], current["login"]) == ("user", "https://github.com", "ann")
    assert current["copilotUser"]["copilot_plan"] == "individual_pro"
    assert "token" not in current

    users = await client.rpc.account.get_all_users()
    assert [(u["authInfo"]["login"], u["token"]) for u in users] == [("ann", "token-of-ann")]

    # The model now gets the signed-in account's token.
    ctx.fake.replies({"text": "hello ann"})
    session = await client.create_session(on_permission_request=APPROVE)
    reply = await session.send_and_wait("hi", timeout=30)
    assert reply.data.content == "hello ann"
    auth = [r["headers"].get("authorization") for r in ctx.fake.requests()]
    assert auth == ["Bearer token-of-ann"], auth

    out = await client.rpc.account.logout(AccountLogoutRequest.from_dict({"authInfo": current}))
    assert out.has_more_users is False
    assert (await client.rpc.account.get_current_auth()).auth_info is None


async def test_login_is_checked_against_github(ctx: Ctx, make_client):
    _set_user(ctx, "revoked", {"status": 401})
    _set_user(ctx, "token-of-bob", {"login": "bob", "copilot_plan": "business", "endpoints": {"api": ctx.fake.url}})
    client = make_client(github_token=None)
    await client.start()

    with pytest.raises(Exception) as refused:
        await client.rpc.account.login(AccountLoginRequest(host="https://github.com", token="revoked"))
    assert "401" in str(refused.value) and "revoked" not in str(refused.value)

    # A login that is not the token's owner is refused too.
    with pytest.raises(Exception) as wrong:
        await client.rpc.account.login(AccountLoginRequest(host="https://github.com", login="carol", token="token-of-bob"))
    assert "bob" in str(wrong.value) and "token-of-bob" not in str(wrong.value)
    assert (await client.rpc.account.get_current_auth()).auth_info is None

    # Logging out someone who never signed in is an error, and changes nothing.
    await client.rpc.account.login(AccountLoginRequest(host="https://github.com", login="bob", token="token-of-bob"))
    with pytest.raises(Exception):
        await client.rpc.account.logout(AccountLogoutRequest.from_dict({"selectionId": "user:https://github.com:nobody"}))
    users = await client.rpc.account.get_all_users()
    assert [u["authInfo"]["login"] for u in users] == ["bob"]
    out = await client.rpc.account.logout(AccountLogoutRequest.from_dict({"selectionId": users[0]["selectionId"]}))
    assert out.has_more_users is False


async def test_the_startup_token_is_the_current_auth_until_someone_signs_in(ctx: Ctx, make_client):
    client = make_client()  # the SDK passes its token with --auth-token-env
    await client.start()
    current = (await client.rpc.account.get_current_auth()).to_dict()["authInfo"]
    assert current["type"] == "token" and current["host"] == "https://github.com"


async def test_no_auto_login_ignores_tokens_in_the_environment(ctx: Ctx, make_client):
    # `useLoggedInUser: false` without a token (`--no-auto-login`): GH_TOKEN is not picked up.
    strict = make_client(github_token=None, use_logged_in_user=False, env_extra={"GH_TOKEN": "env-token"})
    await strict.start()
    assert (await strict.rpc.account.get_current_auth()).auth_info is None

    # By default a token in the environment is the server's credential.
    relaxed = make_client(github_token=None, env_extra={"GH_TOKEN": "env-token"})
    await relaxed.start()
    current = (await relaxed.rpc.account.get_current_auth()).to_dict()["authInfo"]
    assert (current["type"], current["envVar"], current["token"]) == ("env", "GH_TOKEN", "env-token")
