"""The experiment directory's contract: the name of every file ``harness experiment run``
writes, in one place (a run directory's names are in :mod:`harness.model.rundir`).

    runs/experiments/<name>/
        manifest.json     the experiment: its file, grid, axes, versions, report settings
        cells.jsonl       the grid, one cell a line (resumable: done cells are skipped)
        cells/<key>/      one folder a cell: result.json (its summary), jobs.parquet (per-job
                          results), error.txt (why it failed); run/ (an emulated cell's run
                          directory)
        results.parquet   every cell's summary, one row a cell; failed.json the failed cells
        report.md, report.html, plots/   the report (names of a run directory's report)
        report.csv        the report's statistics in full precision (--format csv)
        report.tex        the report's tables as LaTeX tabulars (--format latex)
"""

from __future__ import annotations

MANIFEST_FILE = "manifest.json"
GRID_FILE = "cells.jsonl"
CELLS_DIR = "cells"
JOBS_FILE = "jobs.parquet"
RESULT_FILE = "result.json"
ERROR_FILE = "error.txt"
RUN_DIR = "run"  # the run directory of an emulated cell, inside the cell's folder
TABLE_FILE = "results.parquet"
FAILED_FILE = "failed.json"
REPORT_CSV = "report.csv"
REPORT_TEX = "report.tex"
