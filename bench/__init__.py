"""deltaad's asymptotic benchmark harness (``python -m bench --quick|--full|--tiny``).

- ``bench.programs``  the programs, written once over any number type, and their registry
- ``bench.modes``     float / deltaad / ablations / peers, and their registry
- ``bench.ablations`` naive-delta (Delta trees, paper §6) and backpropagator closures
- ``bench.worker``    one mode on one program in its own process: check, then time and memory
- ``bench.fit``       log-log slopes, linear/quadratic fits with R², the thesis's classes
- ``bench.report``    report.md, results.json, plots, the terminal summary
- ``bench.run``       the command line and the orchestration
"""
