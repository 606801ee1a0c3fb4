"""One Megatron-Core MoE layer, forward and backward, profiled on one GPU.

docs/workload.md ("The host") asks for a profile of one MoE layer: how many kernels the
framework launches for it, how long they run, and how long the host takes to issue them. This
builds Megatron-Core's own MoELayer (its router, its all-to-all token dispatcher, its
permutation) with the modules of its "local" spec, which need neither Transformer Engine nor
the grouped_gemm package: the experts are its SequentialMLP (one MLP per local expert, in a
loop), the permutation its unfused PyTorch path. One GPU holds one rank's view of Qwen3-30B-A3B
at expert parallelism 8: 16 experts, 8 chosen per token, hidden 2048, expert width 768, bf16, so
each expert gets about 2048 of the 4,096 tokens' copies (8,192 tokens: 4096), as on the B200
(mbs 1) and H100 (mbs 2) rows. No all-to-all: expert parallelism 1.

Usage: MEGATRON=<dir holding megatron/core> OUT=<dir> [PROBE=sweep] python megatron_probe.py
(PROBE=sweep: 4, 8, 16, 32 experts at 4,096 tokens, 16 at 1,024, and the dense MLP.)
"""
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.environ.get("MEGATRON", "."))
import torch  # noqa: E402

out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}


def init():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(0)
    torch.distributed.init_process_group(backend="nccl", world_size=1, rank=0)
    from megatron.core import parallel_state as ps
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed

    ps.initialize_model_parallel(1, 1, expert_model_parallel_size=1)
    model_parallel_cuda_manual_seed(123)
    import megatron.core.package_info as pi

    out["megatron_core"] = pi.__version__


def build(experts, topk, hidden, width):
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_submodules
    from megatron.core.transformer.moe.moe_layer import MoELayer
    from megatron.core.transformer.spec_utils import get_submodules
    from megatron.core.transformer.transformer_config import TransformerConfig

    config = TransformerConfig(
        num_layers=1,
        hidden_size=hidden,
        num_attention_heads=32,
        num_moe_experts=experts,
        moe_ffn_hidden_size=width,
        moe_router_topk=topk,
        moe_token_dispatcher_type="alltoall",
        moe_router_load_balancing_type="aux_loss",
        moe_aux_loss_coeff=1e-3,
        moe_grouped_gemm=False,
        gated_linear_unit=True,
        activation_func=torch.nn.functional.silu,
        add_bias_linear=False,
        bf16=True,
        params_dtype=torch.bfloat16,
    )
    sub = get_submodules(
        get_gpt_layer_local_submodules(num_experts=experts, moe_grouped_gemm=False).mlp
    )
    return MoELayer(config, sub).cuda()


def kernels_of(prof):
    """Kernel count and time, and the top kernels by time, from the profiler's events."""
    dev = torch.autograd.DeviceType.CUDA
    ks = [e for e in prof.events() if e.device_type == dev]
    dur = lambda e: getattr(e, "device_time", None) or getattr(e, "cuda_time", 0)  # noqa: E731
    by = {}
    for e in ks:
        n, t = by.get(e.name, (0, 0.0))
        by[e.name] = (n + 1, t + dur(e))
    top = sorted(by.items(), key=lambda kv: -kv[1][1])[:25]
    cpu = sorted(prof.key_averages(), key=lambda a: -a.self_cpu_time_total)[:30]
    return {
        "cpu_ops_top_self": [{"name": a.key[:100], "count": a.count,
                              "self_cpu_us": round(a.self_cpu_time_total, 1),
                              "cpu_us": round(a.cpu_time_total, 1)} for a in cpu],
        "cpu_self_us": round(sum(a.self_cpu_time_total for a in prof.key_averages()), 1),
        "kernels": len(ks),
        "kernel_us": round(sum(dur(e) for e in ks), 1),
        "top": [{"name": k[:120], "count": n, "us": round(t, 1)} for k, (n, t) in top],
    }


def probe(tokens, experts=16, topk=8, hidden=2048, width=768):
    layer = build(experts, topk, hidden, width)
    x = torch.randn(tokens, 1, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    def step():
        y, _ = layer(x)
        y.float().pow(2).mean().backward()

    return timed(step, {"tokens": tokens, "experts": experts, "topk": topk, "hidden": hidden,
                        "width": width})


def dense_probe(tokens, hidden=2048, ffn=6144):
    """Megatron-Core's dense MLP of the local spec (SwiGLU, no bias), the same measurement:
    whether the host's cost per kernel is the framework's or the MoE layer's own."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_submodules
    from megatron.core.process_groups_config import ProcessGroupCollection
    from megatron.core.transformer.transformer_config import TransformerConfig

    config = TransformerConfig(
        num_layers=1, hidden_size=hidden, num_attention_heads=32, ffn_hidden_size=ffn,
        gated_linear_unit=True, activation_func=torch.nn.functional.silu, add_bias_linear=False,
        bf16=True, params_dtype=torch.bfloat16)
    pgs = ProcessGroupCollection.use_mpu_process_groups()
    mlp = get_gpt_layer_local_submodules().mlp(config=config, pg_collection=pgs,
                                               is_mtp_layer=False).cuda()
    x = torch.randn(tokens, 1, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    def step():
        y, _ = mlp(x)
        y.float().pow(2).mean().backward()

    return timed(step, {"dense_mlp": True, "tokens": tokens, "hidden": hidden, "ffn": ffn})


def timed(step, r):
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    n = 20
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    r["wall_us_per_fwd_bwd"] = round((time.perf_counter() - t0) / n * 1e6, 1)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    r.update(kernels_of(prof))
    return r


def sweep():
    """The layer's kernels and host time against its local experts (4,096 tokens), and the
    dense MLP beside it."""
    for name, fn in [("dense_T4096", lambda: dense_probe(4096)),
                     ("moe_E4_top4_T4096", lambda: probe(4096, experts=4, topk=4)),
                     ("moe_E8_top8_T4096", lambda: probe(4096, experts=8, topk=8)),
                     ("moe_E16_top8_T4096", lambda: probe(4096, experts=16, topk=8)),
                     ("moe_E32_top8_T4096", lambda: probe(4096, experts=32, topk=8)),
                     ("moe_E16_top8_T1024", lambda: probe(1024, experts=16, topk=8))]:
        try:
            out[name] = fn()
        except Exception:
            out[name] = {"error": traceback.format_exc()}
        r = out[name]
        print(name, {k: v for k, v in r.items() if k not in ("top", "cpu_ops_top_self")})


try:
    init()
    if os.environ.get("PROBE") == "sweep":
        sweep()
    for t in (4096, 8192) if os.environ.get("PROBE") != "sweep" else ():
        try:
            out[f"moe_layer_T{t}"] = probe(t)
        except Exception:
            out[f"moe_layer_T{t}"] = {"error": traceback.format_exc()}
        print(json.dumps(out[f"moe_layer_T{t}"], indent=1)[:4000])
except Exception:
    out["error"] = traceback.format_exc()
    print(out["error"])
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "megatron_probe.json"), "w"),
          indent=1)
