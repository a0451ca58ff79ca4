"""How many CPUs other processes keep busy right now (for oneDNN's thread count).

The 1-minute load average lags: right after another benchmark or this process's own
earlier work it still reads 1.5 on idle cores, and a process then ran oneDNN on one of
two free cores (ResNet-18 training 656 ms against 515 for PyTorch on two). Instead, the
threads that are runnable now are counted from /proc, outside this process and at normal
priority: a thread niced to 10 or more gets a small share of a core next to ours
(CFS weights), so it does not stall an OpenMP team the way a normal-priority one does.
Kernel threads are left out, and the count is the least of four looks over ~30 ms: one
runnable for a moment when the first oneDNN op loads is not load (a bench that happened to
start beside one ran every bfloat16 op of its process on one of two idle cores, 81 ms a
BERT layer against 42 ms).
"""
import os
import time

MAX_NICE = 9             # a runnable thread with a higher nice value is not counted
SAMPLES, GAP = 4, 0.008  # the count is the least of a few looks (~30 ms in all)
KTHREADD = b"2"          # the kernel's threads are children of pid 2 (kthreadd)


def _runnable_others(own):
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == own or pid == "2":
            continue
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            # fields[0] is the state, [1] the parent, [16] the nice value (proc(5), fields
            # 3, 4 and 19)
            if (len(fields) > 16 and fields[0] == b"R" and fields[1] != KTHREADD
                    and int(fields[16]) <= MAX_NICE):
                n += 1
    return n


def busy_cpus():
    """Runnable normal-priority threads of other processes now, or None without /proc."""
    if not os.path.isdir("/proc/self/task"):
        return None
    own, counts = os.getpid(), []
    try:
        for k in range(SAMPLES):
            if k:
                time.sleep(GAP)
            counts.append(_runnable_others(own))
    except OSError:
        return None
    return min(counts)
