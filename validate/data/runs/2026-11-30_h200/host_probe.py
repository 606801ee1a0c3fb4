"""What the host costs a training step in eager PyTorch, on the device machine.

icsim's replayer charges each kernel launch `--host-launch-us` of host time (default 10 us, the
middle of the 6-15 us eager ops are documented to cost). This measures it: a loop of N small ops
timed on the CPU clock (the host's pace when the GPU is faster), against the same ops replayed
from a CUDA graph (the GPU's own pace); and a plain-PyTorch MoE layer (router, permute, the
rank's experts as a loop of GEMMs, unpermute), forward and backward, with its kernel count from
the profiler, so that host time per kernel can be read off a layer that looks like Megatron's.
"""
import json, sys, time, os

import torch

out = {"torch": torch.__version__, "cuda": torch.version.cuda,
       "gpu": torch.cuda.get_device_name(0), "python": sys.version.split()[0]}
dev = torch.device("cuda", 0)
torch.manual_seed(0)


def wall_per_call(fn, n, warm=50):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6  # issue, issue + drain (us per call)


def graph_per_call(fn, n):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    g.replay()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    g.replay()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1e3 / n


small = torch.randn(4096, device=dev)
ops = {
    "add_scalar_4k": lambda: small.add(1.0),
    "mul_tensor_4k": lambda: small.mul(small),
    "matmul_bf16_256": (lambda a=torch.randn(256, 256, device=dev, dtype=torch.bfloat16):
                        torch.matmul(a, a)),
    "layernorm_4k": (lambda x=torch.randn(8, 4096, device=dev, dtype=torch.bfloat16):
                     torch.nn.functional.layer_norm(x, (4096,))),
}
res = {}
for name, fn in ops.items():
    try:
        issue, total = wall_per_call(fn, 5000)
        res[name] = {"host_issue_us": round(issue, 3), "wall_us": round(total, 3)}
        res[name]["graph_us"] = round(graph_per_call(fn, 2000), 3)
    except Exception as exc:
        res.setdefault(name, {})["error"] = repr(exc)
    print(name, res[name])
out["small_ops"] = res


def moe_layer(T, h, f, E, topk, dtype):
    """One MoE layer as plain PyTorch: router (gate GEMM, softmax, top-k), permute (sort the
    token copies by expert, gather), E experts as a loop of SwiGLU MLPs on their rows, unpermute
    (scale by the routing weight, index_add back). All E experts local: one GPU."""
    x = torch.randn(T, h, device=dev, dtype=dtype, requires_grad=True)
    gate = torch.randn(h, E, device=dev, dtype=dtype, requires_grad=True)
    w1 = [torch.randn(h, 2 * f, device=dev, dtype=dtype, requires_grad=True) * 0.02 for _ in range(E)]
    w2 = [torch.randn(f, h, device=dev, dtype=dtype, requires_grad=True) * 0.02 for _ in range(E)]
    w1 = [w.detach().requires_grad_() for w in w1]
    w2 = [w.detach().requires_grad_() for w in w2]

    def step():
        logits = (x @ gate).float()
        probs = torch.softmax(logits, dim=-1)
        wts, idx = torch.topk(probs, topk, dim=-1)
        flat = idx.reshape(-1)
        order = torch.argsort(flat, stable=True)
        counts = torch.bincount(flat, minlength=E).tolist()  # the host waits: dropless
        tok = order // topk
        xs = x.index_select(0, tok)
        outs, start = [], 0
        for e in range(E):
            n = counts[e]
            xe = xs[start:start + n]
            a, b = (xe @ w1[e]).chunk(2, dim=-1)
            outs.append((torch.nn.functional.silu(a) * b) @ w2[e])
            start += n
        y = torch.cat(outs, 0) * wts.reshape(-1)[order].unsqueeze(1).to(dtype)
        z = torch.zeros_like(x).index_add(0, tok, y)
        z.float().pow(2).mean().backward()
    return step


def run_moe(T, h, f, E, k):
    step = moe_layer(T, h, f, E, k, torch.bfloat16)
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    n = 20
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / n * 1e6
    r = {"T": T, "hidden": h, "ffn": f, "experts": E, "topk": k,
         "wall_us_per_fwd_bwd": round(wall, 1)}
    try:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        dur = lambda e: getattr(e, "device_time", None) or getattr(e, "cuda_time", 0)
        r["kernels"] = len(kernels)
        r["gpu_kernel_us"] = round(sum(dur(e) for e in kernels), 1)
    except Exception as exc:  # the profiler's API moves between versions
        r["profiler_error"] = repr(exc)
    return r


moe = {}
for name, shape in {"qwen3_30b_like_T4096_E16": (4096, 2048, 768, 16, 8),
                    "qwen3_30b_like_T8192_E16": (8192, 2048, 768, 16, 8)}.items():
    try:
        moe[name] = run_moe(*shape)
    except Exception as exc:
        moe[name] = {"error": repr(exc)}
    print(name, moe[name])
out["moe_layer_bf16"] = moe
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "host_probe.json"), "w"), indent=1)
print(json.dumps(out))
