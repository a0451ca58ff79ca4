import time, sys, numpy as onp, torch
import kiln
from kiln import np, autograd
from kiln.gluon import rnn
torch.set_num_threads(2)
T,N,I,H,L = 35,32,256,256,2
xv = onp.random.default_rng(0).normal(size=(T,N,I)).astype(onp.float32)
net = rnn.LSTM(H, num_layers=L, input_size=I); net.initialize(); net.hybridize(backend='c')
x = np.array(xv); x.attach_grad()
def fwd(): net(x).wait_to_read() if hasattr(net(x),'wait_to_read') else net(x)
def fb():
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
tn = torch.nn.LSTM(I,H,L); xt = torch.tensor(xv, requires_grad=True)
def tf():
    with torch.no_grad(): tn(xt)
def tfb():
    tn.zero_grad(); tn(xt)[0].sum().backward()
fb(); fwd()
def tm(f, n=5):
    f(); ts=[]
    for _ in range(n):
        t=time.perf_counter(); f(); ts.append(time.perf_counter()-t)
    return sorted(ts)[n//2]*1e3
for r in range(2):
    print("kiln fwd %.1f  fb %.1f | torch fwd %.1f fb %.1f" % (tm(fwd), tm(fb), tm(tf), tm(tfb)))
