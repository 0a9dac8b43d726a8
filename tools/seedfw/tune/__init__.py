"""`invoke tune`: a multi-objective search of the build options on Optuna.

  space.py       the search space, read from Kconfig (choices, int ranges, bools)
  objectives.py  what a trial is scored on, each figure labelled computed / emulated / estimated
  trial.py       one trial = a real incremental build in its own output dir + a QEMU boot
  study.py       the Optuna study: storage (journal file, Redis journal, RDB URL), sampler, loop
  output.py      tune.json, report.md / report.html (Pareto front, SVG scatter), --export fragment
"""
