"""A messaging app's database traffic, for the real-trace study (run under strace by programs.sh).

    sqlite_messaging.py DB SECONDS SEED MODE

MODE is `delete` (SQLite's default rollback journal) or `wal`. Every 0.2-3 s (seeded) a message is sent
or received (one transaction: the message, the conversation's last message and unread count); now and
then a conversation is opened and marked read. Uses apsw if it is installed, else the sqlite3 module.
"""

import random
import sys
import time

try:
    import apsw

    def connect(path):
        return apsw.Connection(path)

except ImportError:
    import sqlite3

    def connect(path):
        return sqlite3.connect(path, isolation_level=None)


def main():
    path, seconds, seed, mode = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = random.Random(seed)
    db = connect(path)
    db.execute(f"PRAGMA journal_mode = {mode}")
    db.execute("PRAGMA synchronous = FULL")
    db.execute("CREATE TABLE IF NOT EXISTS conversation (id INTEGER PRIMARY KEY, last TEXT, unread INTEGER)")
    db.execute(
        "CREATE TABLE IF NOT EXISTS message (id INTEGER PRIMARY KEY, conversation INTEGER, body TEXT, at REAL)"
    )
    db.execute("CREATE INDEX IF NOT EXISTS by_conversation ON message (conversation, at)")
    for c in range(12):
        db.execute("INSERT OR IGNORE INTO conversation VALUES (?, '', 0)", (c,))
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c = rng.randrange(12)
        if rng.random() < 0.2:
            db.execute("UPDATE conversation SET unread = 0 WHERE id = ?", (c,))
        else:
            body = "".join(rng.choice("abcdefghij ") for _ in range(rng.randrange(20, 400)))
            db.execute("BEGIN")
            db.execute("INSERT INTO message (conversation, body, at) VALUES (?, ?, ?)", (c, body, time.time()))
            db.execute("UPDATE conversation SET last = ?, unread = unread + 1 WHERE id = ?", (body[:40], c))
            db.execute("COMMIT")
        time.sleep(rng.uniform(0.2, 3.0))
    db.close()


if __name__ == "__main__":
    main()
