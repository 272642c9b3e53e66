"""The run directory: its files, their typed records and format version, the store, index, lock and doctor.

The public read API (documented in docs/python-api.md):

    import arena.store
    run = arena.store.open_run("logs/<run-id>")
    run.frame()          # pandas, one row per episode

`open_run`, `Run` (`arena.store.read`); the records of every file a run writes and `FORMAT_VERSION`
(`arena.store.records`); the rules for older runs (`arena.store.migrate`). Importing this package loads only the
core's records: no Ray, no plug-in, no agent, tool or suite.
"""

from .read import FRAME_COLUMNS, Run, open_run
from .records import FORMAT_VERSION, CallRecord, Episode, HarnessCost, RunInfo, RunSummary, SummaryGroup, Verdict
from .store import RunStoreError

__all__ = ["open_run", "Run", "FRAME_COLUMNS", "FORMAT_VERSION", "RunInfo", "Episode", "Verdict", "CallRecord",
           "RunSummary", "SummaryGroup", "HarnessCost", "RunStoreError"]
