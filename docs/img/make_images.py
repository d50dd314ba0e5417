"""Regenerate the images of docs/SIMULATION.md and the README:
``.venv/bin/python docs/img/make_images.py``.

* ``gantt.png``: the first two hours of the ``simulate`` command's scenario (seed 0,
  four workers), by worker.
* ``overrun.png``: a 60 s fixed-rate task whose runs take 150 s, SKIP against CATCH_UP.
"""

from __future__ import annotations

from pathlib import Path

from lldsched.sim.overrun import simulate_overrun
from lldsched.sim.scenario import build_scenario
from lldsched.views.frames import to_frame
from lldsched.views.plots import gantt, overrun_comparison

HERE = Path(__file__).resolve().parent


def main() -> None:
    sim = build_scenario(workers=4, seed=0)
    sim.run_for(2 * 3600)
    gantt(to_frame(sim)).savefig(HERE / "gantt.png", dpi=80)
    overrun_comparison(simulate_overrun(period=60, duration=150, horizon=600)).savefig(
        HERE / "overrun.png", dpi=80
    )


if __name__ == "__main__":
    main()
