"""A process that iterates a DataLoader with 2 workers and prints their pids, then keeps iterating until killed.

Run by tests/test_data_worker_orphans.py as ``python _orphan_loader.py START_METHOD PERSISTENT THREAD``;
THREAD 1 iterates in a second thread (no parent-death signal then: the poll alone must end the workers).
"""

import sys
import threading
import time

import cupynet.data as data


class Slow(data.Dataset):
    """An endless-seeming dataset: each item takes a moment, so the workers are busy or waiting when killed."""

    def __len__(self):
        return 10 ** 6

    def __getitem__(self, index):
        time.sleep(0.01)
        return index


def iterate(method, persistent):
    loader = data.DataLoader(Slow(), batch_size=2, num_workers=2, multiprocessing_context=method,
                             persistent_workers=persistent)
    for i, _ in enumerate(loader):
        if i == 0:
            pids = [proc.pid for proc in loader._pool.procs]
            print(" ".join(map(str, pids)), flush=True)


def main():
    method, persistent, in_thread = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
    if in_thread:
        thread = threading.Thread(target=iterate, args=(method, persistent))
        thread.start()
        thread.join()
    else:
        iterate(method, persistent)


if __name__ == "__main__":
    main()
