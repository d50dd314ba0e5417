"""The simulation player's buttons of the shipped 04-simulation, pressed in JupyterLab
while Run All still runs the cells after it (JupyterLab 4.4+ sends widget messages on a
kernel subshell, a thread of its own in ipykernel 7): every press counts once, in order
(three presses of "+1 hour" are three hours), the kernel's player agrees with the page,
and the kernel's log holds no traceback.  docs/decisions/teaching-kit.md, "A button's press runs on
the kernel's thread, each once, in order"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.servers import (
    KERNEL_VALUES,
    RUN_ALL_TEST_SECONDS,
    browser_page,
    screenshot,
    served,
    start_run_all,
    wait_for_run_all,
    where_it_stands,
)


@pytest.mark.timeout(RUN_ALL_TEST_SECONDS)
def test_presses_during_run_all_each_count_once_in_order(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with (
        served("jupyterlab", "04-simulation", tmp_path) as (url, _, log),
        browser_page() as page,
    ):
        page.goto(url, timeout=60_000, wait_until="commit")
        start_run_all(page)
        clock = page.locator(".lldsched-player-clock")
        try:
            expect(clock).to_have_text("simulated time 2026-01-05 00:00:00 UTC", timeout=150_000)
        except AssertionError as exc:
            raise AssertionError(f"no player: {where_it_stands(page, log)}") from exc
        # While Run All runs the cells after the player: a step, three hours, a day.
        page.locator(".lldsched-player-step").click()
        for _ in range(3):
            page.locator(".lldsched-player-plus1hour").click()
        page.locator(".lldsched-player-plus1day").click()
        for _ in range(3):
            page.locator(".lldsched-player-plus1hour").click()
        # Run All was still running then: some cell waited, or ran ("[*]").
        waiting = page.locator(".jp-InputPrompt", has_text="[*]").count()
        wait_for_run_all(page, log)
        expect(clock).to_have_text("simulated time 2026-01-06 06:00:00 UTC", timeout=60_000)
        held = page.evaluate(KERNEL_VALUES, "print(player.sim.now, player.charts_drawn)")
        screenshot(page, "04-jupyterlab-presses-during-run-all")
        page.locator(".lldsched-player-chart").scroll_into_view_if_needed()
        screenshot(page, "04-jupyterlab-player-after-presses")
        assert waiting > 0, "Run All had ended before the presses"
        # The kernel's player is where the page says (2026-01-06 06:00 UTC), its chart
        # drawn once at first and once per press.
        assert held == f"{1767571200.0 + 30 * 3600} 9", held
        errors = [line for line in log if "Traceback" in line or "Exception in" in line]
        assert not errors, errors
