"""The shipped 09-design-lab in a real browser (JupyterLab after Run All, and Voila): each
of its eleven toggles is alive, and changing it (the next option of a drop-down, a check
box ticked) replaces the text below it: the experiment ran again with the decision
switched.  A teacher's class presses these; nothing else checks them in a browser.
Before that, while Run All still runs the cells after the toggles, each is changed three
times, one after another without waiting (a class clicking about): the kernel ends with
each control's value as the page shows it.  JupyterLab 4.4+ sends widget messages on a
kernel subshell (a thread of its own in ipykernel 7); changes made so were lost (in 4
runs of 4 before the fix), with ``'CapturingDisplayPublisher' object has no attribute
'set_parent'`` in the kernel's log, and the page held back every later change of those
toggles: their drop-down showed one option and their text another, for good.

JupyterLab only: it is what the Binder link opens, and Run All of 09 costs most of a
minute; the same ``interact`` under Voila is driven by 04's test."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

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

TOGGLES = 11  # one per decision of the lab
NAMES = (
    "timer", "push", "notify", "while", "tombstone", "sequence", "handoff", "overrun",
    "shutdown", "listener", "wheel",
)  # fmt: skip
"""The toggles' variables (``NAME_toggle``), in the notebook's order."""
ASK = f"print(*[str(*globals()[n + '_toggle'].values().values()) for n in {NAMES}], sep='|')"
"""Prints what the kernel holds as each toggle's value, in the notebook's order."""


# 09 measures before it shows its toggles (about 40 s of Run All on a loaded two-core
# machine); after that, the slowest toggle (the timing wheel at 100,000 timers) answers in
# a few seconds.
@pytest.mark.timeout(RUN_ALL_TEST_SECONDS)
def test_every_toggle_of_the_shipped_design_lab_reruns_its_experiment(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with (
        served("jupyterlab", "09-design-lab", tmp_path) as (url, _, log),
        browser_page() as page,
    ):
        page.goto(url, timeout=60_000, wait_until="commit")
        start_run_all(page)
        toggles = page.locator(".widget-interact")
        try:
            expect(toggles).to_have_count(TOGGLES, timeout=150_000)
            # The last toggle's first output is there: every toggle has drawn once.
            expect(toggles.last.locator(".widget-output img")).to_be_visible(timeout=60_000)
        except AssertionError as exc:
            raise AssertionError(f"no toggles: {where_it_stands(page, log)}") from exc
        # While Run All still runs the cells after them: three changes each, as fast as
        # the page takes them; not the wheel's (a million timers is half a minute),
        # whose value the kernel must keep all the same.
        for index in range(TOGGLES - 1):
            for _ in range(3):
                change(toggles.nth(index), back=True)
        shown = [value(toggles.nth(index)) for index in range(TOGGLES)]
        wait_for_run_all(page, log)
        deadline = time.monotonic() + 120  # each toggle's call, one after another
        while (held := page.evaluate(KERNEL_VALUES, ASK).split("|")) != shown:
            # answered between the calls; the last ones may still be queued
            assert time.monotonic() < deadline, f"the kernel holds {held}, the page shows {shown}"
        expect(page.get_by_text("model not found")).to_have_count(0)
        for index in range(TOGGLES):
            toggle = toggles.nth(index)
            toggle.scroll_into_view_if_needed()
            output = toggle.locator(".widget-output")
            before = output.text_content() or ""  # inner_text is empty off screen in Lab
            assert before.strip(), f"toggle {index} shows nothing"
            change(toggle)
            expect(output).not_to_have_text(before, timeout=60_000)
            expect(output).not_to_contain_text("Traceback")
        screenshot(page, "09-jupyterlab-last-toggle")


def change(toggle: Any, *, back: bool = False) -> None:
    """Pick the next option of ``toggle``'s drop-down (the one before, ``back``), or
    tick (or clear) its check box."""
    choice = toggle.locator("select")
    if choice.count():
        values = choice.locator("option").evaluate_all("(os) => os.map((o) => o.value)")
        now = values.index(choice.input_value())
        choice.select_option(values[(now + (-1 if back else 1)) % len(values)])
    else:
        toggle.locator("input[type=checkbox]").click()


def value(toggle: Any) -> str:
    """The value ``toggle`` shows, as ``str`` of the control's value in the kernel."""
    choice = toggle.locator("select")
    if choice.count():
        return str(choice.input_value())
    return str(toggle.locator("input[type=checkbox]").is_checked())
