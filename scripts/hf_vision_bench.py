#!/usr/bin/env python3
"""The side-by-side anchor of the GPU check (scripts/gpu_check.sh, issue 34): Hugging Face
transformers' Qwen2-VL ViT on the same random weights as `mineru-cpp bench --device cuda --workload
vision`, in bf16 with attn_implementation="sdpa", on one 1036x1036 image (a [1, 74, 74] patch
grid), timed as ours is: best and mean of 10 passes after two warm-ups, each pass from host pixels
to the embeddings back on the host. Prints one JSON line. Needs torch (CUDA), transformers and
safetensors; the model folder is gen-model's (visual.* tensors, Qwen2-VL config.json).

    python3 scripts/hf_vision_bench.py MODEL_DIR
"""
import glob
import json
import os
import sys
import time

import torch
import transformers
from safetensors.torch import load_file
from transformers import AutoConfig

try:  # transformers 4.45-4.5x
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VisionTransformerPretrainedModel as Vit
except ImportError:  # later names
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLVisionModel as Vit


def main(model_dir):
    cfg = AutoConfig.from_pretrained(model_dir)
    vcfg = cfg.vision_config
    vcfg._attn_implementation = "sdpa"
    vit = Vit._from_config(vcfg, attn_implementation="sdpa", torch_dtype=torch.bfloat16)
    state = {}
    for path in sorted(glob.glob(os.path.join(model_dir, "*.safetensors"))):
        for k, v in load_file(path).items():
            for prefix in ("model.visual.", "visual."):
                if k.startswith(prefix):
                    state[k[len(prefix):]] = v
    missing, unexpected = vit.load_state_dict(state, strict=False)
    missing = [k for k in missing if "inv_freq" not in k]
    if missing or unexpected:
        raise SystemExit(f"weights do not match transformers' ViT: missing {missing[:5]}, unexpected {unexpected[:5]}")
    vit = vit.to("cuda", dtype=torch.bfloat16).eval()
    grid = torch.tensor([[1, 74, 74]], device="cuda")
    patch_dim = vcfg.in_channels * vcfg.temporal_patch_size * vcfg.patch_size ** 2
    gen = torch.Generator().manual_seed(1)
    pixels = torch.rand(74 * 74, patch_dim, generator=gen) * 4 - 2  # host fp32, as a processor gives

    def one_pass():
        with torch.inference_mode():
            x = pixels.to("cuda", dtype=torch.bfloat16)
            out = vit(x, grid_thw=grid)
            out = out.pooler_output if hasattr(out, "pooler_output") else out
            return out.float().cpu()

    for _ in range(2):
        one_pass()
    times = []
    for _ in range(10):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        one_pass()
        times.append(time.perf_counter() - t0)
    print(json.dumps({
        "workload": "hf_vision",
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "attn_implementation": "sdpa",
        "patches": 74 * 74,
        "hf_vision_ms_best": 1e3 * min(times),
        "hf_vision_ms_mean": 1e3 * sum(times) / len(times),
        "peak_memory_mib": torch.cuda.max_memory_allocated() / 2**20,
    }))


if __name__ == "__main__":
    main(sys.argv[1])
