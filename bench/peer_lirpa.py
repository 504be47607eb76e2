#!/usr/bin/python3
"""auto_LiRPA peer of lenspec's verifier (make bench-verify-peer).

The captioner (bench/peer.py's Captioner, either cell) unrolled for a
clean decoding path held fixed: the encoder, then one decoder step per
path token, the token of step t fed back to step t + 1 as a constant. Its
outputs are, at every step t and token z other than path[t], the margins
o_t[path[t]] − o_t[z]; auto_LiRPA bounds them from below over an L∞ box,
so that −lower bounds o_t[z] − o_t[path[t]] from above, the bounds
lenspec's verify.BoundPath gives. One thread. Commands, one per line on
stdin, one JSON answer per line on stdout:

  load MODEL_DIR INPUTS_FILE  read config.json, model.safetensors and the
                              boxes (lo, hi: [N, input]), paths ([N, L],
                              −1 padded) and settings ([α-CROWN iterations,
                              1 for float64, else float32])
  bound I METHOD              bound image I's margins by METHOD (IBP, CROWN
                              or alpha-CROWN): {"upper": [[...] per step],
                              "seconds": s}; the graph is built (untimed)
                              at the image's first bound
  quit
  (and time, tokens, loss: bench/peerproto.py's, unused here)

It needs auto_LiRPA 0.4.0 on PYTHONPATH (../shared/peers/, BSD-3), torch
and numpy; it is a reference to measure against, never a dependency of
lenspec.
"""
import time
import warnings

import torch
import torch.nn as nn

from peer import load_captioner
from peerproto import read_safetensors, serve

# Importing peer set PyTorch to one thread (inter-op threads can be set once).
warnings.filterwarnings("ignore")


def linear(w, b):
    m = nn.Linear(w.shape[1], w.shape[0])
    with torch.no_grad():
        m.weight.copy_(w)
        m.bias.copy_(b)
    return m


class Unrolled(nn.Module):
    """The captioner m with path's tokens fed back: negated margins of every step."""

    def __init__(self, m, path):
        super().__init__()
        self.convs = nn.ModuleList(m.convs)
        self.fc1, self.fc2 = m.encoder.fc1, m.encoder.fc2
        self.lstm, H = m.lstm, m.hidden
        cell, emb, out = m.decoder.cell, m.decoder.embedding.weight, m.decoder.out
        gates = 4 if self.lstm else 1
        bias = (cell.bias_ih + cell.bias_hh).detach()
        # Per gate (i, f, g, o for the LSTM): the input and the recurrent
        # layer, each with both biases, and the fed-back tokens' terms.
        part = lambda v, k: v.detach()[k * H:(k + 1) * H]
        self.inp = nn.ModuleList(linear(part(cell.weight_ih, k), part(bias, k)) for k in range(gates))
        self.rec = nn.ModuleList(linear(part(cell.weight_hh, k), part(bias, k)) for k in range(gates))
        for t in range(1, len(path)):
            feed = emb.detach()[path[t - 1]] @ cell.weight_ih.detach().T
            self.register_buffer("feed%d" % t, feed[None])
        heads = []
        for y in path:
            others = [z for z in range(out.weight.shape[0]) if z != y]
            heads.append(linear(out.weight.detach()[y] - out.weight.detach()[others], out.bias.detach()[y] - out.bias.detach()[others]))
        self.heads = nn.ModuleList(heads)
        self.H = H

    def pre(self, t, h, i0, k):
        if t == 0:
            return self.inp[k](i0)
        f = getattr(self, "feed%d" % t)
        return self.rec[k](h) + f[:, k * self.H:(k + 1) * self.H]

    def forward(self, x):
        a = x
        for c in self.convs:
            a = torch.relu(c(a))
        i0 = self.fc2(torch.relu(self.fc1(a.flatten(1))))
        h = c = None
        outs = []
        for t, head in enumerate(self.heads):
            if self.lstm:
                i, g = torch.sigmoid(self.pre(t, h, i0, 0)), torch.tanh(self.pre(t, h, i0, 2))
                c = i * g if t == 0 else torch.sigmoid(self.pre(t, h, i0, 1)) * c + i * g
                h = torch.sigmoid(self.pre(t, h, i0, 3)) * torch.tanh(c)
            else:
                h = torch.relu(self.pre(t, h, i0, 0))
            outs.append(head(h))
        return torch.cat(outs, 1)


class Peer:
    def load(self, model_dir, inputs):
        import auto_LiRPA
        self.m = load_captioner(model_dir)
        t = read_safetensors(inputs)
        shape = (-1,) + self.m.in_shape
        settings = t["settings"].tolist()
        self.iters, self.dtype = int(settings[0]), torch.float64 if settings[1] else torch.float32
        torch.set_default_dtype(self.dtype)  # auto_LiRPA makes some tensors in the default type
        self.lo, self.hi = t["lo"].to(self.dtype).reshape(shape), t["hi"].to(self.dtype).reshape(shape)
        self.paths = [[z for z in row if z >= 0] for row in t["paths"].tolist()]
        self.nets = {}
        return {"lirpa": auto_LiRPA.__version__}

    def bound(self, i, method):
        from auto_LiRPA import BoundedModule, BoundedTensor, PerturbationLpNorm
        from auto_LiRPA.operators import BoundAdd
        lo, hi = self.lo[i:i + 1], self.hi[i:i + 1]
        if i not in self.nets:
            net = Unrolled(self.m, self.paths[i]).to(self.dtype).eval()
            opts = {"optimize_bound_args": {"iteration": self.iters}, "verbosity": 0}
            bm = BoundedModule(net, (lo + hi) / 2, bound_opts=opts, device="cpu")
            # auto_LiRPA 0.4.0 gives every Add its default conv mode,
            # "patches", and α-CROWN then fails an assertion on the LSTM,
            # whose Adds feed sigmoids and tanhs; no Add here follows a
            # convolution, so matrix mode is what they are.
            for n in bm.nodes():
                if isinstance(n, BoundAdd):
                    n.mode = "matrix"
            self.nets[i] = bm
        bm = self.nets[i]
        x = BoundedTensor((lo + hi) / 2, PerturbationLpNorm(norm=float("inf"), x_L=lo, x_U=hi))
        t0 = time.perf_counter()
        lb, _ = bm.compute_bounds(x=(x,), method=method, bound_upper=False)
        secs = time.perf_counter() - t0
        neg, V = (-lb[0]).tolist(), self.m.vocab
        upper = []
        for t, y in enumerate(self.paths[i]):
            row = neg[t * (V - 1):(t + 1) * (V - 1)]
            upper.append(row[:y] + [0.0] + row[y:])
        return {"upper": upper, "seconds": secs}


def main():
    peer = Peer()
    serve(peer, {}, {"bound": lambda i, method: peer.bound(int(i), method)})


if __name__ == "__main__":
    main()
