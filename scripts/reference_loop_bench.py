#!/usr/bin/env python3
"""The official code's shape of work, re-created in PyTorch, as a same-machine baseline for lpdt.

The issues' speed targets are stated against the paper's official code ("3x its CPU throughput",
"its 8-bit mode is 2.2x slower than its fp32 mode"). That code cannot run here as it is (CUDA,
NCCL, torchvision downloads), so this script re-creates, from the reference spec
(docs/benchmarks.md, "The official code's shape of work, re-created", lists the sections), what
one of its training iterations computes and how it is laid out, and times it next to
`lpdt bench` in the same run:

- ResNet-20 for CIFAR-shaped inputs with EvoNorm-S0 (fp32) or the 8-bit model (QuantMeasure on
  every layer input, gradient bifurcation with two convolutions per layer, Range EvoNorm with
  hard sigmoid, Qsum), written with PyTorch operators as the official code is;
- one model, one SGD optimizer (Nesterov 0.9, weight decay 1e-4) per node;
- push-sum de-bias / re-bias around each node's forward and backward;
- one Choco-SGD round per iteration with the identity compressor: the parameters flattened into
  one vector, x - x_hat sent to the out-neighbour of a directed ring, the round applied at the
  next forward (uniform weights 1/2, consensus step eta).

Two layouts:
- `in-turn`: one process runs every node's iteration one after the other (how the official code
  runs several nodes on one GPU, and how `lpdt bench`'s "per-node" mode works);
- `processes`: one process per node joined by torch.distributed (gloo), messages sent with
  isend/irecv, as the official code runs one rank per node (it uses NCCL broadcasts in two-rank
  groups and a gossip thread; the same bytes move here).

The data are one synthetic batch per node, reused every step: data loading is not timed, as in
`lpdt bench`. By default the reference loop's processes get lpdt's allocator setting (glibc's
mmap threshold and trim threshold at 1 GiB, core/runtime.h), so that the two programs differ in
their work, not in page faults: on a machine where page faults are expensive, glibc's default
slowed this loop 2.2-3.4x (docs/benchmarks.md, "The official code's shape of work",
2026-11-28, later). `--reference-malloc glibc` keeps glibc's default, as the official code runs. Needs Debian's python3-torch (apt-get install python3-torch), the same LibTorch
1.13 and oneDNN lpdt builds against.

    python3 scripts/reference_loop_bench.py --nodes 4 --precision fp32 --layout processes
    python3 scripts/reference_loop_bench.py --nodes 8 --lpdt build/lpdt --rounds 3
"""

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# Parameter counts of the official models for depth 20 and 3 input channels (reference spec
# sections 6 and 7.5): the re-creation must hold the same tensors. Each input channel other than
# 3 changes the first convolution by 16 x 3 x 3 weights.
OFFICIAL_PARAMS = {"fp32": 273_258, "int8": 273_380}
FIRST_CONV_WEIGHTS_PER_CHANNEL = 16 * 3 * 3
EVONORM_GROUPS = 8
RANGE_CHUNKS = 16


def fail(message):
    sys.exit(f"reference_loop_bench: {message}")


# ---------------------------------------------------------------------------------------------
# fp32 model (reference spec section 6)


class EvoNormS0(nn.Module):
    """n = x * sigmoid(v x); y = n / sd_group(x) * gamma + beta, sd over a group's C/G x H x W."""

    def __init__(self, channels):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(1, channels, 1, 1))
        self.bias = nn.Parameter(torch.zeros(1, channels, 1, 1))
        self.v = nn.Parameter(torch.ones(1, channels, 1, 1))

    def forward(self, x):  # x: [B, C, H, W]
        b, c, h, w = x.shape
        grouped = x.view(b, EVONORM_GROUPS, -1)
        sd = (grouped.var(dim=-1, unbiased=False, keepdim=True) + 1e-5).sqrt()
        n = (x * torch.sigmoid(self.v * x)).view(b, EVONORM_GROUPS, -1) / sd
        return n.view(b, c, h, w) * self.weight + self.bias


# ---------------------------------------------------------------------------------------------
# 8-bit model (reference spec section 7): fake quantization in float32


class UniformQuantize(torch.autograd.Function):
    """Section 7.1: 8-bit affine quantize-dequantize with a straight-through gradient."""

    @staticmethod
    def forward(ctx, x, low, high, stochastic):
        scale = max((high - low) / 255.0, 1e-8)
        y = (x - low) / scale
        if stochastic:
            y = y + torch.empty_like(y).uniform_(-0.5, 0.5)
        return y.clamp_(0, 255).round_().mul_(scale).add_(low)

    @staticmethod
    def backward(ctx, grad):
        return grad, None, None, None


class QuantizeGrad(torch.autograd.Function):
    """Identity forward; backward: the gradient at 8 bits, its own per-tensor range, stochastic."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return UniformQuantize.apply(grad, float(grad.min()), float(grad.max()), True)


def q8(t):
    """A weight-like tensor at 8 bits over its own [min, max], round to nearest."""
    return UniformQuantize.apply(t, float(t.min()), float(t.max()), False)


class QuantMeasure(nn.Module):
    """Range = mean over samples of per-sample min / max; running range as (non-trainable)
    parameters updated r = 0.1 r + 0.9 batch; stochastic rounding (the reference's quirk)."""

    def __init__(self):
        super().__init__()
        self.running_min = nn.Parameter(torch.zeros(1), requires_grad=False)
        self.running_max = nn.Parameter(torch.zeros(1), requires_grad=False)

    def forward(self, x):
        flat = x.detach().view(x.size(0), -1)
        low, high = flat.min(-1)[0].mean(), flat.max(-1)[0].mean()
        with torch.no_grad():
            self.running_min.mul_(0.1).add_(low * 0.9)
            self.running_max.mul_(0.1).add_(high * 0.9)
        return UniformQuantize.apply(x, float(low), float(high), True)


class QConv2d(nn.Conv2d):
    """Gradient bifurcation (section 7.2): one convolution gives the weight gradient from the
    float output gradient, a second one the 8-bit layer gradient."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.quantize_input = QuantMeasure()

    def forward(self, x):
        qx, qw = self.quantize_input(x), q8(self.weight)
        out1 = F.conv2d(qx.detach(), qw, None, self.stride, self.padding)
        out2 = QuantizeGrad.apply(F.conv2d(qx, qw.detach(), None, self.stride, self.padding))
        return out1 + out2 - out1.detach()


class QLinear(nn.Linear):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.quantize_input = QuantMeasure()

    def forward(self, x):
        qx, qw, qb = self.quantize_input(x), q8(self.weight), q8(self.bias)
        out1 = F.linear(qx.detach(), qw, qb)
        out2 = QuantizeGrad.apply(F.linear(qx, qw.detach(), qb.detach()))
        return out1 + out2 - out1.detach()


class RangeEvoNorm(EvoNormS0):
    """Section 7.3: hard-sigmoid EvoNorm normalised by the mean range of 16 chunks per group.
    The same parameters as EvoNorm-S0 (gamma, beta, v), and the input's quantizer."""

    def __init__(self, channels):
        super().__init__(channels)
        self.quantize_input = QuantMeasure()

    def forward(self, x):  # x: [B, C, H, W], C*H*W divisible by 128
        x = self.quantize_input(x)
        b, c, h, w = x.shape
        n = x * torch.clamp(x * q8(self.v) / 6 + 0.5, 0, 1)
        chunk = c * h * w // (EVONORM_GROUPS * RANGE_CHUNKS)
        y = x.reshape(b, EVONORM_GROUPS, RANGE_CHUNKS, chunk)
        spread = (y.max(-1)[0] - y.min(-1)[0]).mean(-1)  # [B, G]
        sf = 0.5 * 0.35 * (1 + math.sqrt(math.pi * math.log(4))) / math.sqrt(2 * math.log(chunk))
        s = q8(1 / (spread * sf + 1e-5))
        out = (n.reshape(b, EVONORM_GROUPS, -1) * s[:, :, None]).reshape(b, c, h, w)
        return QuantizeGrad.apply(out * q8(self.weight) + q8(self.bias))


class QSum(nn.Module):
    def __init__(self):
        super().__init__()
        self.quantize_a, self.quantize_b = QuantMeasure(), QuantMeasure()

    def forward(self, a, b):
        return QuantizeGrad.apply(self.quantize_a(a) + self.quantize_b(b))


# ---------------------------------------------------------------------------------------------
# ResNet-20 (both precisions)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride, int8):
        super().__init__()
        conv, norm = (QConv2d, RangeEvoNorm) if int8 else (nn.Conv2d, EvoNormS0)
        self.conv1 = conv(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = norm(cout)
        self.conv2 = conv(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = norm(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(conv(cin, cout, 1, stride, bias=False), norm(cout))
        self.add = QSum() if int8 else None

    def forward(self, x):
        residual = x if self.downsample is None else self.downsample(x)
        out = self.bn2(self.conv2(self.bn1(self.conv1(x))))
        return self.add(residual, out) if self.add is not None else out + residual


class ResNet20(nn.Module):
    def __init__(self, channels, int8, classes=10):
        super().__init__()
        conv, norm = (QConv2d, RangeEvoNorm) if int8 else (nn.Conv2d, EvoNormS0)
        self.conv1 = conv(channels, 16, 3, 1, 1, bias=False)
        self.bn1 = norm(16)
        blocks, cin = [], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(3):
                blocks.append(BasicBlock(cin, cout, stride if i == 0 else 1, int8))
                cin = cout
        self.layers = nn.Sequential(*blocks)
        self.fc = (QLinear if int8 else nn.Linear)(64, classes)
        for m in self.modules():  # reference spec 6 / 7.5 initialisation
            if isinstance(m, nn.Conv2d):
                n = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                m.weight.data.normal_(0, math.sqrt(2.0 / n))
        if int8:
            for block in blocks:
                block.bn2.weight.data.zero_()
            self.fc.weight.data.normal_(0, 0.01)
            self.fc.bias.data.zero_()

    def forward(self, x):  # x: [B, C, 32, 32]
        x = self.layers(self.bn1(self.conv1(x)))
        return self.fc(F.avg_pool2d(x, 8).flatten(1))


# ---------------------------------------------------------------------------------------------
# One node: model, optimizer, push-sum weight and Choco-SGD state (reference spec 5.1, 5.3)


class Node:
    def __init__(self, args, rank):
        torch.manual_seed(1234)  # identical initial models, as the official code
        self.model = ResNet20(args.channels, args.precision == "int8")
        self.params = list(self.model.parameters())
        count = sum(p.numel() for p in self.params)
        official = (OFFICIAL_PARAMS[args.precision]
                    + (args.channels - 3) * FIRST_CONV_WEIGHTS_PER_CHANNEL)
        if count != official:
            fail(f"the {args.precision} ResNet-20 has {count} parameters, the official "
                 f"{official}: the re-creation is not the reference model")
        trainable = [p for p in self.params if p.requires_grad]
        self.opt = torch.optim.SGD(trainable, lr=args.lr, momentum=0.9, weight_decay=1e-4,
                                   nesterov=True)
        gen = torch.Generator().manual_seed(rank)
        self.images = torch.randn(args.batch, args.channels, args.size, args.size, generator=gen)
        self.labels = torch.randint(0, 10, (args.batch,), generator=gen)
        self.eta, self.w = args.eta, 0.5  # uniform mixing on a directed ring: 1 / (out-degree + 1)
        self.ps = 1.0
        self.x_hat = torch.zeros(count)  # own public copy
        self.neighbours = torch.zeros(count)  # s_i = sum over in-neighbours of w * their x_hat
        self.received = None  # the round in flight: a_i = w * q_j, and as_i

    def flat(self):
        return torch.cat([p.data.view(-1) for p in self.params])

    def apply_round(self):
        """The pending consensus update, at the start of the next forward (spec 5.3)."""
        if self.received is None:
            return
        a, a_ps = self.received
        self.ps += self.eta * (a_ps + (self.w - 1) * self.ps)
        self.neighbours += a
        z = self.flat() + self.eta * (self.neighbours + (self.w - 1) * self.x_hat)
        offset = 0
        for p in self.params:
            p.data.copy_(z[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        self.received = None

    def local_step(self):
        self.apply_round()
        for p in self.params:  # de-bias: x = z / ps
            p.data.div_(self.ps)
        loss = F.cross_entropy(self.model(self.images), self.labels)
        loss.backward()
        for p in self.params:  # back to push-sum numerators: z = x * ps
            p.data.mul_(self.ps)
        self.opt.step()
        self.opt.zero_grad()

    def outgoing(self):
        """q_i = z_i - x_hat_i (identity compressor); x_hat_i += q_i; the message w * [q, ps]."""
        q = self.flat() - self.x_hat
        self.x_hat += q
        return torch.cat([q, torch.tensor([self.ps])]) * self.w

    def receive(self, message):
        self.received = (message[:-1], float(message[-1]))


# ---------------------------------------------------------------------------------------------
# Layouts


def time_in_turn(args):
    torch.set_num_threads(args.threads)
    nodes = [Node(args, rank) for rank in range(args.nodes)]
    times = []
    for step in range(args.warmup + args.steps):
        start = time.perf_counter()
        for node in nodes:
            node.local_step()
        messages = [node.outgoing() for node in nodes]
        for rank, node in enumerate(nodes):  # directed ring: node i hears from node i - 1
            node.receive(messages[(rank - 1) % args.nodes])
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    return times


def set_allocator(setting):
    """lpdt's allocator setting (core/runtime.cpp) for this process, or glibc's default."""
    if setting == "glibc":
        return
    import ctypes

    m_trim_threshold, m_mmap_threshold, one_gib = -1, -3, 1 << 30
    libc = ctypes.CDLL("libc.so.6")
    if libc.mallopt(m_mmap_threshold, one_gib) != 1 or libc.mallopt(m_trim_threshold, one_gib) != 1:
        fail("--reference-malloc lpdt: glibc's mallopt refused the 1 GiB thresholds")


def process_main(rank, args, port, queue):
    import torch.distributed as dist

    set_allocator(args.reference_malloc)
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.nodes)
    node = Node(args, rank)
    inbox = torch.zeros(node.x_hat.numel() + 1)
    times = []
    for step in range(args.warmup + args.steps):
        dist.barrier()
        start = time.perf_counter()
        node.local_step()
        message = node.outgoing()
        send = dist.isend(message, (rank + 1) % args.nodes)
        dist.recv(inbox, (rank - 1) % args.nodes)
        send.wait()
        node.receive(inbox.clone())
        dist.barrier()  # the step ends when every node's round has arrived
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    if rank == 0:
        queue.put(times)
    dist.destroy_process_group()


def time_processes(args):
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:  # a free local port for the process group
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=process_main, args=(r, args, port, queue)) for r in
             range(args.nodes)]
    for p in procs:
        p.start()
    times = queue.get()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            fail(f"a rank exited with status {p.exitcode}")
    return times


def lpdt_images_per_s(args, precision):
    """`lpdt bench`'s node-batched engine on the same shapes: images/s from its JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        common = ["--nodes", str(args.lpdt_nodes), "--steps", str(args.steps), "--warmup",
                  str(args.warmup), "--channels", str(args.channels), "--size", str(args.size),
                  "--batch", str(args.batch), "--threads", str(args.lpdt_threads), "--json", out]
        if precision in ("fp32", "bf16"):
            cmd = [args.lpdt, "bench", "--model-precision", precision, *common]
        else:
            cmd = [args.lpdt, "bench", "--precision", "--modes", "int8-integer", *common]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            fail(f"{' '.join(cmd)} failed:\n{run.stderr}")
        with open(out) as f:
            result = json.load(f)
    row = result["rows"][0]
    if precision in ("fp32", "bf16"):
        return row["batched_images_per_s"], result.get("build", {}).get("git_revision", "?")
    return row["images_per_s"], result.get("build", {}).get("git_revision", "?")


def revision():
    """This checkout's git revision (with "+changes" if the tree differs from it), or "?"."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        rev = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain"], capture_output=True,
                               text=True, check=True).stdout.strip()
        return rev + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def machine():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=4, help="nodes (ranks) of the reference loop")
    parser.add_argument("--precision", choices=["fp32", "int8"], default="fp32",
                        help="fp32 (EvoNorm-S0 model) or int8 (the official simulated 8-bit model)")
    parser.add_argument("--layout", choices=["in-turn", "processes"], default="in-turn")
    parser.add_argument("--batch", type=int, default=32, help="images per node per step")
    parser.add_argument("--channels", type=int, default=1, help="input channels")
    parser.add_argument("--size", type=int, default=32, help="input height and width (32)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--threads", type=int, default=0,
                        help="intra-op threads per process (0: in-turn all cores, processes "
                             "cores / nodes, at least 1)")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--eta", type=float, default=1.0, help="Choco-SGD consensus step")
    parser.add_argument("--lpdt", help="also time this lpdt binary's `bench` in alternation")
    parser.add_argument("--lpdt-nodes", type=int, default=8, help="nodes of the lpdt measurement")
    parser.add_argument("--lpdt-threads", type=int, default=0, help="lpdt's threads (0: all)")
    parser.add_argument("--lpdt-precision", choices=["fp32", "bf16"], default="fp32",
                        help="against the fp32 reference: lpdt's engine in float32, or with its "
                             "convolutions in bfloat16 (model.precision = bf16)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="alternating rounds of the reference loop and lpdt")
    parser.add_argument("--reference-malloc", choices=["lpdt", "glibc"], default="lpdt",
                        help="the reference loop's allocator: lpdt's setting (glibc's mmap and "
                             "trim thresholds at 1 GiB, as lpdt sets them) or glibc's default")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if args.size != 32:
        fail(f"--size {args.size}: the official ResNet-20 ends in AvgPool2d(8), so it needs 32")
    for name in ("nodes", "batch", "channels", "steps", "rounds"):
        if getattr(args, name) < 1:
            fail(f"--{name} {getattr(args, name)}: expected at least 1")
    if args.layout == "processes" and args.nodes < 2:
        fail("--layout processes needs at least 2 nodes (a ring of ranks)")
    cores = os.cpu_count() or 1
    if args.threads == 0:
        args.threads = cores if args.layout == "in-turn" else max(1, cores // args.nodes)
    if args.precision != "fp32" and args.lpdt_precision != "fp32":
        fail(f"--lpdt-precision {args.lpdt_precision} compares with the fp32 reference loop: "
             f"drop it, or set --precision fp32")
    if args.lpdt and not os.access(args.lpdt, os.X_OK):
        fail(f"--lpdt {args.lpdt}: not an executable file")

    set_allocator(args.reference_malloc)
    rows = []
    for r in range(args.rounds):
        times = time_in_turn(args) if args.layout == "in-turn" else time_processes(args)
        ms = statistics.median(times) * 1e3
        row = {"round": r + 1, "reference_step_ms": ms,
               "reference_images_per_s": args.nodes * args.batch / (ms / 1e3)}
        if args.lpdt:
            lpdt_precision = args.lpdt_precision if args.precision == "fp32" else args.precision
            row["lpdt_images_per_s"], row["lpdt_revision"] = lpdt_images_per_s(args, lpdt_precision)
            row["ratio"] = row["lpdt_images_per_s"] / row["reference_images_per_s"]
        rows.append(row)
        line = (f"round {r + 1}: reference loop {args.precision} {args.layout}, {args.nodes} nodes, "
                f"{args.reference_malloc} malloc: "
                f"{ms:.1f} ms/step, {row['reference_images_per_s']:.0f} img/s")
        if args.lpdt:
            mode = f"engine {args.lpdt_precision}" if args.precision == "fp32" else "int8-integer"
            line += (f" | lpdt {mode}, {args.lpdt_nodes} nodes: {row['lpdt_images_per_s']:.0f} "
                     f"img/s | ratio {row['ratio']:.2f}x")
        print(line, flush=True)
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "revision": revision(),
              "machine": machine(), "torch": torch.__version__, "threads": args.threads,
              "config": {k: v for k, v in vars(args).items() if k != "json"}, "rounds": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
