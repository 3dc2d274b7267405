"""The SQLite store's integrity check, online backups (taken while another process writes), their
rotation and restore, on real MLflow stores."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from gaca.tracking import backup, restore
from gaca.tracking.store import LOCK_SUFFIX, StoreUnavailable, check_store, prepare_store

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from mlflow.tracking import MlflowClient
    from gaca.tracking.store import prepare_store
    uri, started, runs = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    client = MlflowClient(uri)
    experiment = prepare_store(uri, "gaca")
    started.touch()
    for i in range(runs):
        run = client.create_run(experiment, tags={"i": str(i)})
        for step in range(10):
            client.log_metric(run.info.run_id, "m", step / 20, step=step)
        client.set_terminated(run.info.run_id)
    """
)


def make_store(folder: Path, runs: int) -> tuple[Path, str]:
    database = folder / "mlflow.db"
    uri = f"sqlite:///{database}"
    client = MlflowClient(uri)
    experiment = prepare_store(uri, "gaca")
    for i in range(runs):
        run = client.create_run(experiment, tags={"i": str(i)})
        client.log_metric(run.info.run_id, "m", float(i), step=0)
        client.set_terminated(run.info.run_id)
    return database, uri


def test_a_truncated_store_is_one_line_naming_the_file_and_the_newest_backup(tmp_path: Path):
    database, uri = make_store(tmp_path, 3)
    check_store(uri)  # intact
    assert not database.with_name(database.name + LOCK_SUFFIX).exists()  # prepare_store left no lock file
    with pytest.raises(StoreUnavailable, match="no backup of it exists"):
        os.truncate(database, database.stat().st_size // 2)
        check_store(uri, writes=False)

    (tmp_path / "second").mkdir()  # MLflow caches a store per URI in a process: a new file, a new URI
    database, uri = make_store(tmp_path / "second", 3)
    taken = backup.backup_store(database, "sweep-test")
    os.truncate(database, database.stat().st_size // 2)
    with pytest.raises(StoreUnavailable) as error:
        check_store(uri)
    message = str(error.value)
    assert "\n" not in message and str(database) in message and "is damaged" in message
    assert str(taken.path) in message and "3 finished runs" in message and "gaca backup restore" in message
    assert not database.with_name(database.name + LOCK_SUFFIX).exists()


def test_backups_taken_while_another_process_writes_are_each_a_consistent_state(tmp_path: Path):
    database, uri = make_store(tmp_path, 1)
    started = tmp_path / "started"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, uri, str(started), "8"], stderr=subprocess.PIPE, text=True)
    while not started.exists() and writer.poll() is None:
        pass
    taken = []
    while writer.poll() is None:
        taken.append(backup.backup_store(database, "during", keep=1000))
    assert writer.wait() == 0, writer.stderr.read()[-2000:]
    assert len(taken) >= 2
    finished = []
    for copy in taken:
        check_store(f"sqlite:///{copy.path}")  # passes quick_check
        with sqlite3.connect(copy.path) as connection:
            rows = connection.execute("SELECT run_uuid, status FROM runs").fetchall()
            points = dict(connection.execute("SELECT run_uuid, COUNT(*) FROM metrics GROUP BY run_uuid").fetchall())
        # every run that the copy shows FINISHED has all its points: no torn write
        assert all(points.get(run) == (10 if n else 1) for n, (run, status) in enumerate(rows) if status == "FINISHED")
        finished.append(sum(status == "FINISHED" for _, status in rows))
    assert finished == sorted(finished) and finished[-1] <= 9
    assert [b.name for b in backup.backups(database)] == [b.path.name for b in reversed(taken)]


def test_rotation_keeps_the_newest_and_restore_brings_one_back(tmp_path: Path):
    database, uri = make_store(tmp_path, 2)
    names = [backup.backup_store(database, f"sweep-{i}", keep=3).path.name for i in range(5)]
    kept = [b.name for b in backup.backups(database)]
    assert kept == names[:1:-1]  # the three newest, newest first

    client = MlflowClient(uri)
    client.create_run(client.get_experiment_by_name("gaca").experiment_id)  # a run after the backups
    os.truncate(database, 4096)
    chosen, aside = restore.restore(database)
    assert chosen.name == names[-1]
    check_store(uri)
    assert backup.run_counts(database) == {"FINISHED": 2}
    assert aside is not None and aside.exists() and aside.name.startswith("mlflow.db.replaced-")
    assert [b.name for b in backup.backups(database)] == kept  # the moved-aside store is no backup
    with pytest.raises(FileNotFoundError, match="no backup named 'nope'"):
        restore.restore(database, "nope")


def test_restore_refuses_while_a_process_uses_the_store(tmp_path: Path):
    database, _ = make_store(tmp_path, 1)
    backup.backup_store(database, "sweep")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from gaca.tracking.backup import hold_in_use; "
            "hold_in_use(Path(sys.argv[1])); print('held', flush=True); time.sleep(60)",
            str(database),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        before = database.read_bytes()
        with pytest.raises(restore.StoreInUse, match="in use by a running sweep"):
            restore.restore(database)
        assert database.read_bytes() == before
    finally:
        holder.kill()
        holder.wait()
    restore.restore(database)  # the holder is gone


def test_a_partial_copy_left_by_a_killed_driver_is_removed_and_one_in_progress_is_not(tmp_path: Path):
    database, _ = make_store(tmp_path, 1)
    folder = backup.backup_folder(database)
    folder.mkdir(parents=True, exist_ok=True)
    stale = folder / "mlflow-20261203T000000Z-sweep-x.db.partial"
    fresh = folder / "mlflow-20261203T000001Z-sweep-y.db.partial"
    stale.write_bytes(b"half a copy")
    fresh.write_bytes(b"a copy being written")
    old = time.time() - backup.STALE_PARTIAL_S - 60
    os.utime(stale, (old, old))
    backup.backup_store(database, "sweep-z")
    assert not stale.exists() and fresh.exists()
    assert len(backup.backups(database)) == 1


def test_drivers_backing_up_one_store_in_the_same_second_each_keep_their_copy(tmp_path: Path):
    # Two sweeps started together once shared one ``.partial`` name: one copied into a file the other had
    # renamed away, and failed with "attempt to write a readonly database".
    database, _ = make_store(tmp_path, 3)
    start = time.time() + 3
    script = (
        "import sys, time; from pathlib import Path; from gaca.tracking.backup import backup_store\n"
        "while time.time() < float(sys.argv[2]): time.sleep(0.0005)\n"
        "print(backup_store(Path(sys.argv[1]), 'sweep-detector').path.name)"
    )
    drivers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(database), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    names = []
    for driver in drivers:
        out, err = driver.communicate(timeout=120)
        assert driver.returncode == 0, err[-2000:]
        names.append(out.strip())
    assert len(set(names)) == 4
    assert sorted(b.name for b in backup.backups(database)) == sorted(names)
    for taken in backup.backups(database):
        check_store(f"sqlite:///{taken.path}", writes=False)
        assert backup.run_counts(taken.path) == {"FINISHED": 3}
    assert not list(backup.backup_folder(database).glob("*.partial"))
    umask = os.umask(0)
    os.umask(umask)
    assert {taken.path.stat().st_mode & 0o777 for taken in backup.backups(database)} == {0o666 & ~umask}
