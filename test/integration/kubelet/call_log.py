"""CallLog: what a test double received, appended by its server threads and read by the test.

Entries are dicts. Server threads append them (and may fill in an entry they appended, e.g. the
bytes a connection sent later); the test reads copies and can wait, bounded by a timeout that only
ends a broken test, until a given number of entries arrived — so a test knows a request reached
the double without sleeping.
"""
import copy
import threading


class CallLog:
    """A list of dict entries guarded by a condition variable."""

    def __init__(self):
        self._entries = []
        self._cond = threading.Condition()

    def append(self, entry):
        """Adds entry (a dict) and wakes the waiters; returns it so the caller can update it."""
        with self._cond:
            self._entries.append(entry)
            self._cond.notify_all()
        return entry

    def update(self, entry, **fields):
        """Sets fields of an entry appended before."""
        with self._cond:
            entry.update(fields)
            self._cond.notify_all()

    def snapshot(self):
        """A deep copy of every entry, oldest first."""
        with self._cond:
            return copy.deepcopy(self._entries)

    def count(self):
        """How many entries there are."""
        with self._cond:
            return len(self._entries)

    def wait_for(self, count, timeout, where=None):
        """Waits until at least count entries exist (that satisfy where(entry), if given);
        returns the snapshot. Raises TimeoutError when timeout seconds pass first (a guard,
        never an expected outcome)."""
        def enough():
            return sum(1 for e in self._entries if where is None or where(e)) >= count

        with self._cond:
            if not self._cond.wait_for(enough, timeout):
                raise TimeoutError("expected %d matching entries of %d after %ss"
                                   % (count, len(self._entries), timeout))
            return copy.deepcopy(self._entries)

    def clear(self):
        """Forgets every entry."""
        with self._cond:
            self._entries.clear()
