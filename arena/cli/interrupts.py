"""What a run command leaves behind when it does not run to its end: refused before it played anything, or
stopped by Ctrl-C.

`RunGuard` is told the run directory as soon as the runner knows it (`seen`, before anything is written there) and
whether it existed then. `refused()` removes a directory this invocation created when not one episode record was
written in it (a run refused before it starts leaves nothing on disk); a directory that existed before (a resumed
run, another run's) is never removed, nor one whose run lock another process holds: two runs of one command started
at the same moment both find no directory, and the one refused must not remove the other's. `interrupted_line()`
says what a Ctrl-C keeps: the episodes recorded, that those in flight were not recorded and will be played again, and
the `arena resume` command.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from arena.judges.metrics import ERRORED
from arena.store.lock import RunLock, RunLockedError
from arena.store.store import RunStore

INTERRUPTED_EXIT = 130
"""The exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it."""


@dataclass
class RunGuard:
    """The run directory of one run command, and whether this invocation created it."""

    run_dir: Path | None = None
    created: bool = False
    planned: int | None = None

    def seen(self, run_dir: Path) -> None:
        """The runner's run directory, before it writes anything there."""
        self.run_dir, self.created = Path(run_dir), not Path(run_dir).exists()

    def started(self, todo: int, total: int) -> None:
        """The grid's size (`total`), as the runner reports it when the playing starts (`todo`: what is left)."""
        self.planned = total

    def wrote_episodes(self) -> bool:
        """Whether any byte of an episode record was written in the run directory."""
        episodes = RunStore(self.run_dir).episodes_path if self.run_dir is not None else None
        return episodes is not None and episodes.is_file() and episodes.stat().st_size > 0

    def recorded(self) -> dict[str, str]:
        """Episode key -> finish reason of the latest record of each episode in the run directory (none: empty)."""
        if self.run_dir is None or not self.wrote_episodes():
            return {}
        return {key: entry.finish for key, entry in RunStore(self.run_dir).index(persist=False).latest().items()}

    def refused(self) -> bool:
        """Remove the run directory if this invocation created it, no episode was recorded in it and no other
        process holds its run lock (taken for the removal); whether it was removed."""
        if self.run_dir is None or not self.created or not self.run_dir.is_dir() or self.wrote_episodes():
            return False
        try:
            with RunLock(self.run_dir, "arena run (removing the directory of a run that did not start)"):
                if self.wrote_episodes():  # (recorded by the process that held the lock until now)
                    return False
                shutil.rmtree(self.run_dir, ignore_errors=True)
        except RunLockedError:  # another process writes this run: the directory is its own
            return False
        return not self.run_dir.exists()

    def interrupted_line(self) -> str:
        """The one line a Ctrl-C prints: what is kept, what will be played again, and how to go on."""
        if self.run_dir is None:
            return "interrupted before the run directory was opened: nothing was recorded"
        try:
            finishes = self.recorded()
        except (OSError, ValueError) as exc:  # the line is still said, with what could not be read
            return (f"interrupted: the episodes kept in {self.run_dir} could not be counted ({exc}); those in flight "
                    f"were not recorded and will be played again by `arena resume {self.run_dir}`")
        kept = sum(1 for finish in finishes.values() if finish not in ERRORED)
        errored = len(finishes) - kept
        of = f" of {self.planned}" if self.planned else ""
        also = f" ({errored} errored, played again too)" if errored else ""
        return (f"interrupted: {kept}{of} episode(s) are kept in {self.run_dir}{also}; the episodes in flight were "
                f"not recorded and will be played again by `arena resume {self.run_dir}`")
