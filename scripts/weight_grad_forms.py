#!/usr/bin/python3
"""Weight gradients of ResNet-20's stride-1 3x3 convolutions, three ways, in one process.

oneDNN's backward-weights kernel (what LibTorch's autograd runs, channels-last) against an
im2col GEMM (torch.nn.functional.unfold, then one matrix product per batch or one for the whole
batch). Prints the median of --repeats calls of each after 3 untimed ones, per shape, and the
largest difference relative to the largest gradient entry. Uses the Python LibTorch of the
machine (Debian's python3-torch shares LibTorch 1.13 and oneDNN 2.6 with the C++ build).

    python3 scripts/weight_grad_forms.py --threads 1 --repeats 30
"""
import argparse
import time

import torch


def median_ms(f, repeats):
    for _ in range(3):
        f()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2] * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    n = args.batch
    print(f"torch {torch.__version__}, {args.threads} thread(s), batch {n}, median of {args.repeats}")
    print("channels  size  oneDNN ms  im2col+bmm ms  im2col+mm ms  max rel. difference")
    for c, h in [(16, 32), (32, 16), (64, 8)]:
        x = torch.randn(n, c, h, h).contiguous(memory_format=torch.channels_last)
        w = torch.randn(c, c, 3, 3).contiguous(memory_format=torch.channels_last)
        dy = torch.randn(n, c, h, h).contiguous(memory_format=torch.channels_last)

        def onednn():
            return torch.ops.aten.convolution_backward(
                dy, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False])[1]

        def im2col_bmm():
            cols = torch.nn.functional.unfold(x, 3, padding=1)  # [n, c*9, h*h]
            return torch.bmm(dy.reshape(n, c, h * h), cols.transpose(1, 2)).sum(0).view(c, c, 3, 3)

        def im2col_mm():
            cols = torch.nn.functional.unfold(x, 3, padding=1).permute(1, 0, 2).reshape(c * 9, -1)
            return (dy.permute(1, 0, 2, 3).reshape(c, -1) @ cols.t()).view(c, c, 3, 3)

        reference = onednn()
        difference = max((f() - reference).abs().max().item() for f in (im2col_bmm, im2col_mm))
        print(f"{c:8d}  {h:4d}  {median_ms(onednn, args.repeats):9.2f}  "
              f"{median_ms(im2col_bmm, args.repeats):13.2f}  {median_ms(im2col_mm, args.repeats):12.2f}"
              f"  {difference / reference.abs().max().item():.1e}")


if __name__ == "__main__":
    main()
