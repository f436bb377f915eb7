"""``systemMessage`` on create: append / replace / customize (sections) / transform callbacks.

The recordings never compare the system prompt (the harness normalises it to ``${system}``),
so these tests read it from the captured model request instead.
"""

from __future__ import annotations

from copilot.session import PermissionHandler

from conftest import Ctx, snapshot_final_reply, system_prompt, tap_server_requests

CODE_CHANGE_TAG = "<code_change_instructions>"


async def _prompt_with(ctx: Ctx, client, system_message=None, **kwargs) -> str:
    """The system prompt of the first model request of a new session configured so."""
    ctx.fake.replies({"text": "ok"})
    before = len(ctx.fake.requests())
    if system_message is not None:
        kwargs["system_message"] = system_message
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, **kwargs
    )
    response = await session.send_and_wait("hello", timeout=30)
    assert response is not None and response.data.content == "ok"
    reqs = ctx.fake.requests()
    assert len(reqs) == before + 1
    return system_prompt(reqs[-1])


async def _section_texts(ctx: Ctx, client, *section_ids: str) -> dict[str, str]:
    """The server's rendered text of the given sections, learnt through identity transforms."""
    seen: dict[str, str] = {}

    def keep(section_id):
        def transform(content: str) -> str:
            seen[section_id] = content
            return content

        return transform

    await _prompt_with(
        ctx,
        client,
        {"mode": "customize", "sections": {s: {"action": keep(s)} for s in section_ids}},
    )
    assert set(seen) == set(section_ids), seen
    return seen


async def test_default_prompt_has_the_code_change_block(ctx: Ctx, client):
    prompt = await _prompt_with(ctx, client)
    assert CODE_CHANGE_TAG in prompt, prompt[:2000]


async def test_append_keeps_the_built_in_prompt(ctx: Ctx, client):
    default = await _prompt_with(ctx, client)
    marker = "APPENDED_INSTRUCTION: always answer in French."
    appended = await _prompt_with(ctx, client, {"mode": "append", "content": marker})
    assert appended.rstrip().endswith(marker), appended[-500:]
    assert appended.startswith(default[:200]), appended[:300]
    assert CODE_CHANGE_TAG in appended
    assert appended.count(marker) == 1


async def test_replace_is_exact(ctx: Ctx, client):
    content = "You are KRYPTON.\nAnswer every question with the single word KRYPTON."
    prompt = await _prompt_with(ctx, client, {"mode": "replace", "content": content})
    assert prompt == content


async def test_customize_remove_code_change_rules(ctx: Ctx, client):
    identity = (await _section_texts(ctx, client, "identity"))["identity"]
    prompt = await _prompt_with(
        ctx, client, {"mode": "customize", "sections": {"code_change_rules": {"action": "remove"}}}
    )
    assert CODE_CHANGE_TAG not in prompt, prompt
    assert identity in prompt, "only the removed section may disappear"


async def test_customize_replace_identity_section(ctx: Ctx, client):
    snapshot = "system_message_sections/should_use_replaced_identity_section_in_response.yaml"
    identity = (await _section_texts(ctx, client, "identity"))["identity"]
    ctx.load(snapshot)
    replacement = (
        "You are Botanica, a helpful gardening assistant. You only talk about plants and "
        "gardening."
    )
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        system_message={
            "mode": "customize",
            "sections": {"identity": {"action": "replace", "content": replacement}},
        },
    )
    response = await session.send_and_wait("Who are you?", timeout=30)
    assert response is not None and response.data.content == snapshot_final_reply(snapshot)
    prompt = system_prompt(ctx.fake.requests()[-1])
    assert replacement in prompt
    assert identity not in prompt
    assert CODE_CHANGE_TAG in prompt, "other sections stay"


async def test_customize_append_and_prepend_sections(ctx: Ctx, client):
    texts = await _section_texts(ctx, client, "tone", "safety")
    prompt = await _prompt_with(
        ctx,
        client,
        {
            "mode": "customize",
            "sections": {
                "tone": {"action": "append", "content": "TONE_APPENDIX"},
                "safety": {"action": "prepend", "content": "SAFETY_PREFIX"},
            },
        },
    )
    tone_at = prompt.index(texts["tone"])
    assert prompt.index("TONE_APPENDIX") > tone_at + len(texts["tone"]) - 1, prompt
    assert prompt.index("SAFETY_PREFIX") < prompt.index(texts["safety"]), prompt


async def test_transform_callback_rewrites_the_section(ctx: Ctx, client):
    snapshot = "system_message_transform/should_apply_transform_modifications_to_section_content.yaml"
    (ctx.work_dir / "hello.txt").write_text("Hello!", encoding="utf-8")
    ctx.load(snapshot)
    wire = tap_server_requests(client, "systemMessage.transform")
    received: list[str] = []

    async def identity_transform(content: str) -> str:
        received.append(content)
        return content + "\nTRANSFORM_MARKER"

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        system_message={
            "mode": "customize",
            "sections": {"identity": {"action": identity_transform}},
        },
    )
    response = await session.send_and_wait("Read the contents of hello.txt", timeout=30)
    assert response is not None and response.data.content == snapshot_final_reply(snapshot)
    assert received and all(received), received
    assert len(wire) >= 1
    params = wire[0]["params"]
    assert params["sessionId"] == session.session_id
    assert list(params["sections"]) == ["identity"], params
    assert params["sections"]["identity"]["content"] == received[0]
    # Every model call of the message uses the transformed section.
    reqs = ctx.fake.requests()
    assert len(reqs) == 2
    for req in reqs:
        prompt = system_prompt(req)
        assert received[0] + "\nTRANSFORM_MARKER" in prompt, prompt[:1500]
        assert CODE_CHANGE_TAG in prompt
