"""The fuzzer's side of its child process: send a request, get the program that ran and its
result, or learn that the child crashed or hung (then a fresh child takes over)."""
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading

import kiln

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(kiln.__file__)))


class Child:
    def __init__(self, timeout=120.0, env=None):
        self.timeout = timeout
        self.env = dict(os.environ, PYTHONPATH=_ROOT + os.pathsep +
                        os.environ.get("PYTHONPATH", ""), **(env or {}))
        self.proc = None

    def _start(self):
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "kiln.fuzz.worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, env=self.env, text=True, cwd=_ROOT)
        self.lines = queue.Queue()
        proc, lines = self.proc, self.lines

        def pump():
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)
        threading.Thread(target=pump, daemon=True).start()

    def _next(self):
        try:
            line = self.lines.get(timeout=self.timeout)
        except queue.Empty:
            return "hang"
        return None if line is None else json.loads(line)

    def run(self, request):
        """(status, source, result): status 'ok', 'crash' or 'hang'; for a crash, result
        holds the exit status and the end of the child's stderr."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        first = self._next()
        source = first.get("program") if isinstance(first, dict) else request.get("source")
        second = self._next() if isinstance(first, dict) else first
        if isinstance(second, dict):
            return "ok", source, second["result"]
        status = "hang" if second == "hang" else "crash"
        return status, source, self._finish()

    def _finish(self):
        proc = self.proc
        self.proc = None
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
        self.stderr.seek(0)
        tail = self.stderr.read()[-3000:].decode("utf-8", "replace")
        self.stderr.close()
        return {"exit": code, "stderr": tail}

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
