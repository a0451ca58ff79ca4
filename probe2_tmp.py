import kiln, numpy as onp
from kiln import np, autograd
from kiln.gluon import rnn
net = rnn.LSTM(256, num_layers=1, input_size=256); net.initialize(); net.hybridize(backend='c')
x = np.array(onp.ones((35,32,256),'float32'))
net(x)
