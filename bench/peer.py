#!/usr/bin/python3
"""PyTorch peer of lenspec's benchmark (lenspec bench peer, make bench-peer).

The same models written in PyTorch, timing the same operations on the same
bytes as lenspec, one thread. lenspec starts this script, writes the inputs
to a safetensors file, and sends one command per line on stdin; each answer
is one JSON line on stdout. Commands:

  load MODEL_DIR INPUTS_FILE   read config.json, model.safetensors and the inputs
  time OP REPS [WARMUP]        run OP WARMUP times (default 1) untimed, then REPS
                               times; answer the seconds of each timed run
  tokens                       the tokens decode emits for the decode inputs
  quit

OP is decode (greedy decoding of every decode input, batches of 256, each
batch until all its rows emitted eos or the step cap), train-step (a
teacher-forced cross-entropy step with Adam on the train batch) or pgd (one
PGD iteration on the paper's proxy J̃ for the pgd batch: forward along the
greedy path, input gradient, Adam, projection onto the L∞ ball).

It reads safetensors itself (Debian has no safetensors module) and needs
only torch and numpy. It is a reference to measure against, never a
dependency of lenspec.
"""
import json

import torch
import torch.nn as nn

from peerproto import read_safetensors, serve

torch.set_num_threads(1)
torch.set_num_interop_threads(1)



class Captioner(nn.Module):
    """lenspec's cnn-rnn-captioner (docs/models.md), either cell."""

    def __init__(self, cfg):
        super().__init__()
        inp = cfg["input"]
        self.eos, self.vocab, self.max_steps = cfg["eos_id"], len(cfg["vocab"]), cfg["max_steps"]
        self.lstm = cfg["cell"] == "lstm"
        self.encoder = nn.Module()
        ch, h, w = inp["channels"], inp["height"], inp["width"]
        convs = []
        for i, cv in enumerate(cfg["conv"]):
            conv = nn.Conv2d(ch, cv["out_channels"], cv["kernel"], cv["stride"], cv["padding"])
            setattr(self.encoder, "conv%d" % (i + 1), conv)
            convs.append(conv)
            h = (h + 2 * cv["padding"] - cv["kernel"]) // cv["stride"] + 1
            w = (w + 2 * cv["padding"] - cv["kernel"]) // cv["stride"] + 1
            ch = cv["out_channels"]
        self.convs = convs
        self.in_shape = (inp["channels"], inp["height"], inp["width"])
        self.encoder.fc1 = nn.Linear(ch * h * w, cfg["fc_hidden"])
        self.encoder.fc2 = nn.Linear(cfg["fc_hidden"], cfg["embedding_size"])
        self.decoder = nn.Module()
        self.decoder.embedding = nn.Embedding(self.vocab, cfg["embedding_size"])
        if self.lstm:
            self.decoder.cell = nn.LSTMCell(cfg["embedding_size"], cfg["hidden_size"])
        else:
            self.decoder.cell = nn.RNNCell(cfg["embedding_size"], cfg["hidden_size"], nonlinearity="relu")
        self.decoder.out = nn.Linear(cfg["hidden_size"], self.vocab)
        self.hidden = cfg["hidden_size"]

    def encode(self, x):
        a = x.view(x.shape[0], *self.in_shape)
        for c in self.convs:
            a = torch.relu(c(a))
        e = self.encoder
        return e.fc2(torch.relu(e.fc1(a.flatten(1))))

    def start(self, x):
        b = x.shape[0]
        h = torch.zeros(b, self.hidden)
        return (h, torch.zeros(b, self.hidden)) if self.lstm else h

    def step(self, i, state):
        state = self.decoder.cell(i, state)
        h = state[0] if self.lstm else state
        return self.decoder.out(h), state


def greedy(m, x, steps):
    """Greedy decoding of the rows of x, as idiomatic PyTorch does it: the
    emitted tokens [B, T] of every step, until every row emitted eos."""
    i, state = m.encode(x), m.start(x)
    done = torch.zeros(x.shape[0], dtype=torch.bool)
    ys = []
    for _ in range(steps):
        o, state = m.step(i, state)
        y = o.argmax(1)  # ties: the lowest index, as lenspec
        ys.append(y)
        done |= y == m.eos
        if bool(done.all()):
            break
        i = m.decoder.embedding(y)
    return torch.stack(ys, 1)


def tokens_before_eos(ys, eos):
    out = []
    for row in ys.tolist():
        out.append(row[:row.index(eos)] if eos in row else row)
    return out


def load_captioner(model_dir):
    """The captioner of model_dir: its config.json and model.safetensors."""
    with open(model_dir + "/config.json") as f:
        cfg = json.load(f)
    m = Captioner(cfg)
    w = read_safetensors(model_dir + "/model.safetensors")
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(w[name])
    return m


class Peer:
    def load(self, model_dir, inputs):
        self.m = load_captioner(model_dir)
        t = read_safetensors(inputs)
        self.decode_x = t["decode"].float()
        self.train_x, self.train_y = t["train"].float(), t["train_labels"].long()
        self.pgd_x0 = t["pgd"].float()
        meta = t["settings"].tolist()  # [decode_steps, pgd_steps, pgd_eps, pgd_lr, pgd_clip, lo, hi]
        self.decode_steps, self.pgd_steps = int(meta[0]), int(meta[1])
        self.eps, self.lr, self.clip, self.lo, self.hi = meta[2], meta[3], meta[4], meta[5], meta[6]
        self.opt = torch.optim.Adam(self.m.parameters(), lr=1e-9)
        self.x = self.pgd_x0.clone().requires_grad_(True)
        self.popt = torch.optim.Adam([self.x], lr=self.lr)
        self.box_lo = torch.clamp(self.pgd_x0 - self.eps, min=self.lo)
        self.box_hi = torch.clamp(self.pgd_x0 + self.eps, max=self.hi)

    def decode(self):
        with torch.no_grad():
            return [greedy(self.m, self.decode_x[b:b + 256], self.decode_steps) for b in range(0, self.decode_x.shape[0], 256)]

    def tokens(self):
        out = []
        for ys in self.decode():
            out += tokens_before_eos(ys, self.m.eos)
        return out

    def train_step(self):
        m, x, y = self.m, self.train_x, self.train_y  # y: [B, T] label tokens, -1 padded
        m.train()
        for p in m.parameters():
            p.requires_grad_(True)
        self.opt.zero_grad()
        b = x.shape[0]
        lengths = (y >= 0).sum(1)
        i, state = m.encode(x), m.start(x)
        loss = 0
        for t in range(int(lengths.max()) + 1):
            o, state = m.step(i, state)
            target = torch.where(t < lengths, y[:, min(t, y.shape[1] - 1)], torch.full_like(lengths, m.eos))
            target = torch.where(t <= lengths, target, torch.full_like(lengths, -100))
            loss = loss + nn.functional.cross_entropy(o, target, ignore_index=-100, reduction="sum") / b
            i = m.decoder.embedding(target.clamp(min=0))
        loss.backward()
        self.opt.step()

    def pgd(self):
        m = self.m
        m.eval()
        for p in m.parameters():
            p.requires_grad_(False)
        self.popt.zero_grad()
        x = self.x
        i, state = m.encode(x), m.start(x)
        live = torch.ones(x.shape[0])
        total = 0
        for _ in range(self.pgd_steps):
            o, state = m.step(i, state)
            y = o.argmax(1)
            others = o.clone()
            others[:, m.eos] = float("-inf")
            term = torch.clamp(o[:, m.eos] - others.max(1).values, min=-self.clip)
            total = total + (term * live).sum()
            live = live * (y != m.eos).float()
            if float(live.sum()) == 0:
                break
            i = m.decoder.embedding(y)
        total.backward()
        self.popt.step()
        with torch.no_grad():
            x.copy_(torch.max(torch.min(x, self.box_hi), self.box_lo))


def main():
    peer = Peer()
    serve(peer, {"decode": peer.decode, "train-step": peer.train_step, "pgd": peer.pgd})


if __name__ == "__main__":
    main()
