"""The ``exit_plan_mode`` tool: offered in plan mode when the client handles
``exitPlanMode.request``; the client's decision reaches the model and sets the session's mode."""

from __future__ import annotations

from copilot.generated.rpc import PlanUpdateRequest
from copilot.session import PermissionHandler

from conftest import Ctx, record_events, tool_names, tool_results

def _mode(value) -> str:
    return str(getattr(value, "value", value))


PLAN = {
    "summary": "Add greeting.txt",
    "actions": ["autopilot", "interactive", "exit_only"],
    "recommendedAction": "interactive",
}


async def test_an_approved_plan_leaves_plan_mode_for_the_chosen_mode(ctx: Ctx, client):
    requests = []

    async def review(request, invocation):
        requests.append((dict(request), invocation["session_id"]))
        return {"approved": True, "selectedAction": "interactive", "feedback": "Looks good"}

    ctx.fake.replies({"tool_calls": [{"name": "exit_plan_mode", "arguments": PLAN}]}, {"text": "Implementing."})
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, on_exit_plan_mode_request=review
    )
    events = record_events(session)
    await session.rpc.plan.update(PlanUpdateRequest(content="# Plan\n- write greeting.txt\n"))
    await session.send_and_wait("Plan a greeting file.", agent_mode="plan", timeout=30)

    assert requests == [
        (
            {
                "summary": "Add greeting.txt",
                "actions": ["autopilot", "interactive", "exit_only"],
                "recommendedAction": "interactive",
                "planContent": "# Plan\n- write greeting.txt\n",
            },
            session.session_id,
        )
    ]
    first, second = ctx.fake.requests()
    assert "exit_plan_mode" in tool_names(first)
    assert tool_results(second)[0]["content"] == (
        "Plan approved! Exited plan mode.\n\nYou are now in interactive mode. Start implementing the plan now, in this "
        "same response. Approving the plan is your go-signal, so do not stop to ask whether to proceed or wait for "
        "another message."
    )
    requested = events.of("exit_plan_mode.requested")
    assert len(requested) == 1 and requested[0].data.summary == "Add greeting.txt"
    assert requested[0].data.plan_content == "# Plan\n- write greeting.txt\n"
    completed = events.of("exit_plan_mode.completed")
    assert len(completed) == 1 and completed[0].data.approved is True
    assert completed[0].data.selected_action.value == "interactive" and completed[0].data.feedback == "Looks good"
    assert completed[0].data.request_id == requested[0].data.request_id
    assert _mode(await session.rpc.mode.get()) == "interactive"


async def test_a_rejected_plan_stays_in_plan_mode_with_the_feedback(ctx: Ctx, client):
    ctx.fake.replies({"tool_calls": [{"name": "exit_plan_mode", "arguments": {"summary": "S"}}]}, {"text": "Revising."})
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        on_exit_plan_mode_request=lambda request, invocation: {"approved": False, "feedback": "Add tests first"},
    )
    await session.send_and_wait("Plan it.", agent_mode="plan", timeout=30)
    second = ctx.fake.requests()[1]
    assert tool_results(second)[0]["content"] == "Plan not approved. User feedback: Add tests first"
    assert _mode(await session.rpc.mode.get()) == "plan"


async def test_exit_plan_mode_is_offered_only_in_plan_mode_with_a_handler(ctx: Ctx, client):
    ctx.fake.replies({"text": "a"}, {"text": "b"})
    with_handler = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        on_exit_plan_mode_request=lambda request, invocation: {"approved": True},
    )
    await with_handler.send_and_wait("hi", timeout=30)
    without = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    await without.send_and_wait("hi", agent_mode="plan", timeout=30)
    interactive, plan_without_handler = ctx.fake.requests()
    assert "exit_plan_mode" not in tool_names(interactive)
    assert "exit_plan_mode" not in tool_names(plan_without_handler)
