"""The shipped 09-design-lab in a real browser (JupyterLab after Run All, and Voila): each
of its eleven toggles is alive, and changing it (the next option of a drop-down, a check
box ticked) replaces the text below it: the experiment ran again with the decision
switched.  A teacher's class presses these; nothing else checks them in a browser.

JupyterLab only: it is what the Binder link opens, and Run All of 09 costs most of a
minute; the same ``interact`` under Voila is driven by 04's test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.servers import (
    RUN_ALL_TEST_SECONDS,
    browser_page,
    screenshot,
    served,
    where_it_stands,
)

TOGGLES = 11  # one per decision of the lab


# 09 measures before it shows its toggles (about 40 s of Run All on a loaded two-core
# machine); after that, the slowest toggle (the timing wheel at 100,000 timers) answers in
# a few seconds.
@pytest.mark.timeout(RUN_ALL_TEST_SECONDS)
def test_every_toggle_of_the_shipped_design_lab_reruns_its_experiment(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with (
        served("jupyterlab", "09-design-lab", tmp_path) as (url, prepare, log),
        browser_page() as page,
    ):
        page.goto(url, timeout=60_000, wait_until="commit")  # Voila streams as it runs
        prepare(page)
        toggles = page.locator(".widget-interact")
        try:
            expect(toggles).to_have_count(TOGGLES, timeout=150_000)
            # The last toggle's first output is there: every toggle has drawn once.
            expect(toggles.last.locator(".widget-output img")).to_be_visible(timeout=60_000)
        except AssertionError as exc:
            raise AssertionError(f"no toggles: {where_it_stands(page, log)}") from exc
        expect(page.get_by_text("model not found")).to_have_count(0)
        for index in range(TOGGLES):
            toggle = toggles.nth(index)
            toggle.scroll_into_view_if_needed()
            output = toggle.locator(".widget-output")
            before = output.text_content() or ""  # inner_text is empty off screen in Lab
            assert before.strip(), f"toggle {index} shows nothing"
            choice = toggle.locator("select")
            if choice.count():
                values = choice.locator("option").evaluate_all("(os) => os.map((o) => o.value)")
                now = values.index(choice.input_value())
                choice.select_option(values[(now + 1) % len(values)])
            else:
                toggle.locator("input[type=checkbox]").click()
            expect(output).not_to_have_text(before, timeout=60_000)
            expect(output).not_to_contain_text("Traceback")
        screenshot(page, "09-jupyterlab-last-toggle")
