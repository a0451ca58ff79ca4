"""The C half of a hybridized block's call: from `net(x)` to the compiled program.

Its C is csrc/fastdispatch.c, included at the end of csrc/fastcall.c: one extension
module, built by fastcall.py.

`Dispatcher` serves one hybridized function: given kiln arrays, it finds the compiled
entry whose Caller accepts them (not while recording; same training mode), reads the
current parameter arrays, runs it and wraps the single output. Entries that need Python
around the program (guards, pre-call hooks, state written back, several outputs) are
never added, and anything it declines returns NotImplemented for the Python path.

`BlockCall` is HybridBlock.__call__ itself once the extension is built (see
fastcall.install_block_call): the checks of the Python version (hybridized, no hooks, not
tracing, no keyword arguments), then the block's Dispatcher, all without a Python frame.
Tracing and autograd state are per thread: both read the calling thread's (the
threading.local objects kiln._core.trace._local and kiln._core.autograd._state) on every
call, so one thread tracing or recording never turns another's calls down a wrong path.
Whatever it declines goes to the block's _call_undispatched, so both versions take the
same paths. On the seed MLP the Python version cost 0.84 us per call over a bare C call.

kiln arrays are read and made through their slots' offsets (ndarray has __slots__),
found once from the member descriptors; a type whose slots are not plain object slots
falls back to getattr and setattr.
"""
