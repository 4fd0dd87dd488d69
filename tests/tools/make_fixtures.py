"""Reference fixtures for a C++ Qwen2-VL / MinerU2.5 engine, made with HF transformers.

This is the script that wrote tests/fixtures/{tiny,tinyvocab}/golden_*.{safetensors,json},
tests/fixtures/smart_resize.json, tests/fixtures/resize/ and tests/fixtures/tokenizer_golden.json.
Versions used for the committed files: transformers 5.17.0, torch 2.11, Pillow, tokenizers (CPU, fp32).
Run it where torch + transformers are installed (any CPU works; a GPU only speeds the last,
optional timing stage): `OUT=/tmp/out python3 tests/tools/make_fixtures.py` from the repository
root, then unpack $OUT/fixtures_*.tar.gz (each holds fixtures/...) into tests/ and run `ctest -L golden`. The random weights are
seeded, so the models and goldens come out the same for the same library versions.

Runs on the device machine (torch + transformers there). Writes into $OUT:
  fixtures.tar.gz  -- tiny models (config.json, model.safetensors) + golden.safetensors + case.json
  tokenizer_golden.json
  gpu_anchor.json  -- HF transformers timings for the real MinerU2.5 shape (random weights)
Every stage is guarded so one failure does not lose the others.
"""
import json, os, sys, time, traceback, tarfile, io, math, zlib

OUT = os.environ.get("OUT", "/tmp/out")
WORK = "/tmp/fx"
os.makedirs(OUT, exist_ok=True)
os.makedirs(WORK, exist_ok=True)
LOG = []


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.append(s)


import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from PIL import Image

log("torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.cuda.is_available())
from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

Qwen2VLImageProcessor = Qwen2VLImageProcessorFast = smart_resize = None
try:
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor, smart_resize
except Exception as e:
    print("slow processor import failed", e)
try:
    from transformers.models.qwen2_vl.image_processing_qwen2_vl_fast import Qwen2VLImageProcessorFast
except Exception as e:
    print("fast processor import failed", e)
if Qwen2VLImageProcessor is None:
    Qwen2VLImageProcessor = Qwen2VLImageProcessorFast
if smart_resize is None:
    from transformers.models.qwen2_vl.image_processing_qwen2_vl_fast import smart_resize

FAST_PROC = [None]
MEAN = [0.48145466, 0.4578275, 0.40821073]
STD = [0.26862954, 0.26130258, 0.27577711]


def legacy_name(k):
    # transformers >= 4.52 keeps model.language_model.* / model.visual.*; on-disk Qwen2-VL
    # checkpoints (and MinerU2.5) use model.* / visual.* / lm_head.*
    if k.startswith("model.language_model."):
        return "model." + k[len("model.language_model."):]
    if k.startswith("model.visual."):
        return "visual." + k[len("model.visual."):]
    return k


def make_config(kind):
    if kind == "tiny":
        vision = dict(depth=2, embed_dim=64, hidden_size=64, hidden_act="quick_gelu", mlp_ratio=4,
                      num_heads=4, in_channels=3, patch_size=14, spatial_merge_size=2, temporal_patch_size=2)
        text = dict(vocab_size=2048, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, hidden_act="silu", rms_norm_eps=1e-6,
                    max_position_embeddings=4096, tie_word_embeddings=False,
                    rope_scaling={"type": "mrope", "rope_type": "default", "mrope_section": [2, 3, 3]}, rope_theta=1000000.0)
        ids = dict(image_token_id=2000, video_token_id=2001, vision_start_token_id=1998, vision_end_token_id=1999)
    elif kind == "tinyvocab":  # full Qwen2 vocab, bf16, tied, real special ids
        vision = dict(depth=1, embed_dim=32, hidden_size=32, hidden_act="quick_gelu", mlp_ratio=4,
                      num_heads=2, in_channels=3, patch_size=14, spatial_merge_size=2, temporal_patch_size=2)
        text = dict(vocab_size=151936, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                    num_attention_heads=2, num_key_value_heads=1, hidden_act="silu", rms_norm_eps=1e-6,
                    max_position_embeddings=4096, tie_word_embeddings=True,
                    rope_scaling={"type": "mrope", "rope_type": "default", "mrope_section": [2, 3, 3]}, rope_theta=1000000.0)
        ids = dict(image_token_id=151655, video_token_id=151656, vision_start_token_id=151652, vision_end_token_id=151653)
    else:  # real MinerU2.5 shape
        vision = dict(depth=32, embed_dim=1280, hidden_size=896, hidden_act="quick_gelu", mlp_ratio=4,
                      num_heads=16, in_channels=3, patch_size=14, spatial_merge_size=2, temporal_patch_size=2)
        text = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                    num_attention_heads=14, num_key_value_heads=2, hidden_act="silu", rms_norm_eps=1e-6,
                    max_position_embeddings=32768, tie_word_embeddings=True,
                    rope_scaling={"type": "mrope", "rope_type": "default", "mrope_section": [8, 12, 12]}, rope_theta=1000000.0)
        ids = dict(image_token_id=151655, video_token_id=151656, vision_start_token_id=151652, vision_end_token_id=151653)
    # flat (v4-style) config.json, the on-disk format of Qwen2-VL checkpoints
    flat = dict(architectures=["Qwen2VLForConditionalGeneration"], model_type="qwen2_vl",
                bos_token_id=151643, eos_token_id=151645, attention_dropout=0.0, initializer_range=0.02,
                use_sliding_window=False, sliding_window=32768, max_window_layers=text["num_hidden_layers"],
                torch_dtype="float32", use_cache=True, vision_config=dict(vision, model_type="qwen2_vl", in_chans=vision["in_channels"],
                                                   spatial_patch_size=vision["patch_size"]), **ids)
    flat.update({k: v for k, v in text.items()})
    try:
        cfg = Qwen2VLConfig(text_config=dict(text), vision_config=dict(vision), **ids)
    except Exception:
        cfg = Qwen2VLConfig(vision_config=dict(vision), **text, **ids)
    cfg._attn_implementation = "eager"
    try:
        cfg.text_config._attn_implementation = "eager"
        cfg.vision_config._attn_implementation = "eager"
    except Exception:
        pass
    return cfg, flat


def randomize(model, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and ("norm" in name or "ln_q" in name):
                if name.endswith("weight"):
                    p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
                else:
                    p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p[0].numel() if p.dim() > 1 else p.numel()
                std = scale / math.sqrt(max(fan_in, 1))
                if "embed_tokens" in name:
                    std = 0.5
                p.copy_(std * torch.randn(p.shape, generator=g))


def synth_image(w, h, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    r = (x * 255 // max(w - 1, 1)).astype(np.uint8)
    gch = (y * 255 // max(h - 1, 1)).astype(np.uint8)
    b = ((x // 7 + y // 5) % 2 * 200).astype(np.uint8)
    img = np.stack([r, gch, b], -1)
    noise = rng.integers(0, 40, size=img.shape, dtype=np.uint8)
    img = np.clip(img.astype(np.int32) + noise - 20, 0, 255).astype(np.uint8)
    return Image.fromarray(img, "RGB")


def pil_pixel_values(img, min_pixels, max_pixels, patch=14, merge=2, tps=2):
    """Qwen2-VL preprocessing with Pillow's uint8 bicubic resize (the classic HF 'slow' path)."""
    w, h = img.size
    rh, rw = smart_resize(h, w, factor=patch * merge, min_pixels=min_pixels, max_pixels=max_pixels)
    im = img.convert("RGB")
    if (rw, rh) != (w, h):
        im = im.resize((rw, rh), Image.BICUBIC)
    a = np.asarray(im).astype(np.float32) * np.float32(1 / 255)
    a = (a - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
    a = a.transpose(2, 0, 1)[None]  # 1,C,H,W
    a = np.concatenate([a] * tps, 0)  # T,C,H,W
    gh, gw = rh // patch, rw // patch
    a = a.reshape(1, tps, 3, gh // merge, merge, patch, gw // merge, merge, patch)
    a = a.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return torch.from_numpy(np.ascontiguousarray(a.reshape(gh * gw, 3 * tps * patch * patch))), (1, gh, gw)


def save_model(model, flat, d, dtype):
    os.makedirs(d, exist_ok=True)
    sd = {}
    for k, v in model.state_dict().items():
        nk = legacy_name(k)
        if flat.get("tie_word_embeddings") and nk == "lm_head.weight":
            continue
        sd[nk] = v.detach().to(dtype).contiguous().clone()
    save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    flat = dict(flat, torch_dtype={torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}[dtype])
    json.dump(flat, open(os.path.join(d, "config.json"), "w"), indent=2)
    return sorted(sd.keys())


def check_reload(d, model, inputs):
    try:
        m2, info = Qwen2VLForConditionalGeneration.from_pretrained(d, output_loading_info=True, dtype=torch.float32,
                                                                   attn_implementation="eager")
    except TypeError:
        m2, info = Qwen2VLForConditionalGeneration.from_pretrained(d, output_loading_info=True, torch_dtype=torch.float32,
                                                                   attn_implementation="eager")
    log("reload info", {k: v for k, v in info.items() if v})
    m2.eval()
    with torch.no_grad():
        a = model(**inputs).logits
        b = m2(**inputs).logits
    log("reload max diff", (a - b).abs().max().item())
    return m2


def build_prompt_ids(cfg_ids, n_image_tokens_list, rng, vocab_text_max):
    ids = list(rng.integers(0, vocab_text_max, size=5))
    for n in n_image_tokens_list:
        ids += [cfg_ids["vision_start_token_id"]] + [cfg_ids["image_token_id"]] * n + [cfg_ids["vision_end_token_id"]]
        ids += list(rng.integers(0, vocab_text_max, size=4))
    ids += list(rng.integers(0, vocab_text_max, size=3))
    return [int(x) for x in ids]


def run_case(model, cfg, flat, proc, images, ids_fn, name, dtype_note, n_gen=16):
    """Forward + greedy generation; returns dict of golden tensors."""
    tensors, meta = {}, {"name": name, "weights": dtype_note}
    if images:
        enc = proc(images=images, return_tensors="pt")
        pv, thw = enc["pixel_values"].float(), enc["image_grid_thw"]
        merge = cfg.vision_config.spatial_merge_size
        ntok = [int(t[0] * t[1] * t[2] // (merge * merge)) for t in thw]
        tensors["pixel_values"] = pv
        try:
            pil = [pil_pixel_values(im, 56 * 56, 28 * 28 * 64) for im in images]
            ppv = torch.cat([x[0] for x in pil], 0)
            tensors["pixel_values_pil"] = ppv
            meta["pil_vs_processor_max_abs_diff"] = float((ppv - pv).abs().max()) if ppv.shape == pv.shape else "shape mismatch"
        except Exception as e:
            log("pil path failed", repr(e))
        if Qwen2VLImageProcessorFast is not None and FAST_PROC[0] is not None:
            try:
                ef = FAST_PROC[0](images=images, return_tensors="pt")
                tensors["pixel_values_fast"] = ef["pixel_values"].float()
            except Exception as e:
                log("fast proc failed", repr(e))
        tensors["image_grid_thw"] = thw.to(torch.int64)
        meta["image_sizes_wh"] = [list(im.size) for im in images]
    else:
        pv, thw, ntok = None, None, []
    ids = ids_fn(ntok)
    input_ids = torch.tensor([ids], dtype=torch.long)
    tensors["input_ids"] = input_ids[0]
    inputs = dict(input_ids=input_ids, attention_mask=torch.ones_like(input_ids))
    if pv is not None:
        inputs.update(pixel_values=pv, image_grid_thw=thw,
                      mm_token_type_ids=(input_ids == flat["image_token_id"]).long())
    hooks, acts = [], {}
    inner = model.model
    visual = getattr(inner, "visual", None) or getattr(model, "visual")
    lm = getattr(inner, "language_model", None) or inner

    def grab(key):
        def f(mod, inp, out):
            o = out[0] if isinstance(out, (tuple, list)) else out
            if hasattr(o, "last_hidden_state"):
                o = o.last_hidden_state
            if key not in acts and torch.is_tensor(o):
                acts[key] = o.detach().float().clone()
        return f
    if pv is not None:
        hooks.append(visual.patch_embed.register_forward_hook(grab("vision.patch_embed")))
        hooks.append(visual.blocks[0].register_forward_hook(grab("vision.block0")))
        hooks.append(visual.merger.register_forward_hook(grab("vision.merger")))
    hooks.append(lm.layers[0].register_forward_hook(grab("lm.layer0")))
    hooks.append(lm.norm.register_forward_hook(grab("lm.final_norm")))

    def grab_pos(mod, inp, out):
        if "position_ids" not in acts and len(inp) > 1 and torch.is_tensor(inp[1]):
            acts["position_ids"] = inp[1].detach().clone()
    if hasattr(lm, "rotary_emb"):
        hooks.append(lm.rotary_emb.register_forward_hook(grab_pos))
    with torch.no_grad():
        out = model(**inputs)
    for h in hooks:
        h.remove()
    for k, v in acts.items():
        if k == "position_ids":
            tensors["position_ids"] = (v[:, 0, :] if v.dim() == 3 else v).to(torch.int64)
            continue
        tensors["act." + k] = v.reshape(-1, v.shape[-1]) if v.dim() > 2 else v
    lg = out.logits[0].float()
    if lg.shape[-1] > 4096:
        tensors["logits_last4"] = lg[-4:].contiguous()
        tensors["logits_argmax"] = lg.argmax(-1).to(torch.int64)
        tensors["logits_max"] = lg.max(-1).values
        tensors["logits_logsumexp"] = torch.logsumexp(lg, -1)
    else:
        tensors["logits"] = lg
    # M-RoPE positions as the model computes them
    with torch.no_grad():
        gen = model.generate(**inputs, max_new_tokens=n_gen, do_sample=False, min_new_tokens=n_gen,
                             eos_token_id=None, pad_token_id=0, output_scores=True, return_dict_in_generate=True)
    new = gen.sequences[0, input_ids.shape[1]:]
    tensors["generated_ids"] = new.to(torch.int64)
    tensors["generated_scores"] = torch.stack([s[0] for s in gen.scores]).float().max(-1).values
    meta["n_image_tokens"] = ntok
    meta["seq_len"] = len(ids)
    return tensors, meta


def stage_fixtures():
    import shutil
    fx = os.path.join(WORK, "fixtures")
    shutil.rmtree(fx, ignore_errors=True)
    os.makedirs(fx)
    torch.manual_seed(0)
    # preprocessor used for fixtures: real Qwen2-VL algorithm, small pixel budget
    proc_small = Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=28 * 28 * 64, patch_size=14, merge_size=2,
                                       temporal_patch_size=2, image_mean=MEAN, image_std=STD)
    if Qwen2VLImageProcessorFast is not None:
        try:
            FAST_PROC[0] = Qwen2VLImageProcessorFast(min_pixels=56 * 56, max_pixels=28 * 28 * 64, patch_size=14, merge_size=2,
                                                     temporal_patch_size=2, image_mean=MEAN, image_std=STD)
        except Exception as e:
            log("fast proc init failed", repr(e))
    pp_cfg = dict(min_pixels=56 * 56, max_pixels=28 * 28 * 64, patch_size=14, merge_size=2, temporal_patch_size=2,
                  image_mean=MEAN, image_std=STD, resample=3, do_rescale=True, rescale_factor=1 / 255,
                  do_normalize=True, do_convert_rgb=True, image_processor_type="Qwen2VLImageProcessor")
    imgs = [synth_image(100, 57, 1), synth_image(61, 130, 2), synth_image(200, 200, 3)]
    for i, im in enumerate(imgs):
        im.save(os.path.join(fx, f"image{i}.png"))
    for kind, dtype in [("tiny", torch.float32), ("tinyvocab", torch.bfloat16)]:
        cfg, flat = make_config(kind)
        model = Qwen2VLForConditionalGeneration(cfg).eval()
        randomize(model, seed=1 if kind == "tiny" else 2)
        if dtype != torch.float32:  # golden computed in fp32 from the rounded weights
            with torch.no_grad():
                for p in model.parameters():
                    p.copy_(p.to(dtype).float())
        d = os.path.join(fx, kind)
        keys = save_model(model, flat, d, dtype)
        json.dump(pp_cfg, open(os.path.join(d, "preprocessor_config.json"), "w"), indent=2)
        log(kind, "saved", len(keys), "tensors")
        idmap = dict(image_token_id=flat["image_token_id"], vision_start_token_id=flat["vision_start_token_id"],
                     vision_end_token_id=flat["vision_end_token_id"])
        vmax = 1990 if kind == "tiny" else 151000
        cases = [("one_image", [imgs[0]]), ("two_images", [imgs[1], imgs[2]]), ("text_only", [])]
        for cname, cimgs in cases:
            rng = np.random.default_rng(zlib.crc32(cname.encode()) % 1000)
            try:
                t, meta = run_case(model, cfg, flat, proc_small, cimgs,
                                   lambda nt: build_prompt_ids(idmap, nt, rng, vmax), cname, str(dtype))
                meta["images"] = [f"image{imgs.index(im)}.png" for im in cimgs]
                save_file({k: v.contiguous() for k, v in t.items()}, os.path.join(d, f"golden_{cname}.safetensors"))
                json.dump(meta, open(os.path.join(d, f"golden_{cname}.json"), "w"), indent=2)
                log(kind, cname, "ok", meta)
                if cname == "one_image":
                    enc = proc_small(images=cimgs, return_tensors="pt")
                    ii = t["input_ids"][None]
                    check_reload(d, model, dict(input_ids=ii, attention_mask=torch.ones_like(ii),
                                                pixel_values=enc["pixel_values"], image_grid_thw=enc["image_grid_thw"],
                                                mm_token_type_ids=(ii == flat["image_token_id"]).long()))
            except Exception:
                log(kind, cname, "FAILED", traceback.format_exc())
    # smart_resize table with MinerU-like budgets and PIL bicubic resize goldens
    table = []
    for (mn, mx) in [(56 * 56, 28 * 28 * 1280), (3136, 12845056), (28 * 28 * 4, 28 * 28 * 2048)]:
        for (h, w) in [(1, 1), (27, 900), (28, 28), (57, 100), (1036, 1036), (2200, 1700), (3508, 2480), (40, 4000),
                       (10, 3000), (719, 1281), (5000, 5000), (333, 777)]:
            try:
                rh, rw = smart_resize(h, w, factor=28, min_pixels=mn, max_pixels=mx)
                table.append(dict(h=h, w=w, min_pixels=mn, max_pixels=mx, out_h=int(rh), out_w=int(rw)))
            except Exception as e:
                table.append(dict(h=h, w=w, min_pixels=mn, max_pixels=mx, error=str(e)))
    json.dump(table, open(os.path.join(fx, "smart_resize.json"), "w"), indent=1)
    rs = os.path.join(fx, "resize")
    os.makedirs(rs)
    src = synth_image(173, 91, 9)
    src.save(os.path.join(rs, "src.png"))
    for (w, h) in [(84, 56), (196, 112), (56, 28), (345, 182)]:
        src.resize((w, h), Image.BICUBIC).save(os.path.join(rs, f"bicubic_{w}x{h}.png"))
    for part, names in [("tiny", ["tiny"]), ("tinyvocab", ["tinyvocab"]),
                        ("common", [n for n in os.listdir(fx) if n not in ("tiny", "tinyvocab")])]:
        fn = os.path.join(OUT, f"fixtures_{part}.tar.gz")
        with tarfile.open(fn, "w:gz") as tf:
            for n in names:
                tf.add(os.path.join(fx, n), arcname=os.path.join("fixtures", n))
        log("tar", part, os.path.getsize(fn))


def stage_tokenizer():
    from tokenizers import Tokenizer
    # The Qwen2 tokenizer of the tinyvocab fixture; the case texts are those of the committed golden.
    p = os.environ.get("TOKENIZER_JSON", os.path.join("tests", "fixtures", "tinyvocab", "tokenizer.json"))
    tok = Tokenizer.from_file(p)
    cases = os.environ.get("TOKENIZER_CASES", os.path.join("tests", "fixtures", "tokenizer_golden.json"))
    texts = [c["text"] if isinstance(c, dict) else c for c in json.load(open(cases))]
    res = []
    for s in texts:
        enc = tok.encode(s, add_special_tokens=False)
        res.append(dict(text=s, ids=enc.ids, decoded=tok.decode(enc.ids, skip_special_tokens=False),
                        decoded_skip=tok.decode(enc.ids, skip_special_tokens=True)))
    json.dump(res, open(os.path.join(OUT, "tokenizer_golden.json"), "w"), ensure_ascii=False, indent=0)
    log("tokenizer cases", len(res))


def stage_gpu_anchor(budget_s=150):
    if not torch.cuda.is_available():
        log("no cuda")
        return
    t_start = time.time()
    res = {"gpu": torch.cuda.get_device_name(0)}
    cfg, flat = make_config("real")
    for impl in ["sdpa"]:
        try:
            cfg._attn_implementation = impl
            cfg.text_config._attn_implementation = impl
            cfg.vision_config._attn_implementation = impl
        except Exception:
            pass
    model = Qwen2VLForConditionalGeneration(cfg).to(torch.bfloat16).cuda().eval()
    nparam = sum(p.numel() for p in model.parameters())
    res["params"] = nparam
    proc = Qwen2VLImageProcessor(min_pixels=3136, max_pixels=1036 * 1036 + 1, patch_size=14, merge_size=2,
                                 temporal_patch_size=2, image_mean=MEAN, image_std=STD)
    img = synth_image(1036, 1036, 5)
    enc = proc(images=[img], return_tensors="pt")
    pv, thw = enc["pixel_values"].cuda().to(torch.bfloat16), enc["image_grid_thw"].cuda()
    res["layout_grid_thw"] = thw.tolist()
    visual = getattr(model.model, "visual", None)

    def timed(fn, n=5):
        fn(); torch.cuda.synchronize()
        ts = []
        for _ in range(n):
            t = time.time(); fn(); torch.cuda.synchronize(); ts.append(time.time() - t)
        return sorted(ts)[len(ts) // 2]
    with torch.no_grad():
        res["vision_encode_1036_s"] = timed(lambda: visual(pv, grid_thw=thw))
        ntok = int(thw[0].prod().item() // 4)
        ids = [151644, 8948, 198] + [151652] + [151655] * ntok + [151653] + [198, 33, 151645, 198, 151644, 77091, 198]
        input_ids = torch.tensor([ids], device="cuda")
        inputs = dict(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), pixel_values=pv, image_grid_thw=thw,
                      mm_token_type_ids=(input_ids == 151655).long())
        res["layout_prefill_s"] = timed(lambda: model(**inputs), n=3)
        for bs, ngen in [(1, 256), (32, 256)]:
            if time.time() - t_start > budget_s:
                break
            # batch of text-only continuations: decode throughput of the LM
            bi = torch.randint(0, 150000, (bs, 64), device="cuda")
            t0 = time.time()
            out = model.generate(input_ids=bi, attention_mask=torch.ones_like(bi), max_new_tokens=ngen,
                                 min_new_tokens=ngen, do_sample=False, eos_token_id=None, pad_token_id=0)
            torch.cuda.synchronize()
            dt = time.time() - t0
            res[f"decode_bs{bs}_tok_per_s"] = bs * ngen / dt
        res["peak_mem_gb"] = torch.cuda.max_memory_allocated() / 1e9
    log("gpu anchor", res)
    json.dump(res, open(os.path.join(OUT, "gpu_anchor.json"), "w"), indent=1)


if __name__ == "__main__":
    stages = sys.argv[1:] or ["fixtures", "tokenizer", "gpu"]
    for st in stages:
        t = time.time()
        try:
            {"fixtures": stage_fixtures, "tokenizer": stage_tokenizer, "gpu": stage_gpu_anchor}[st]()
        except Exception:
            log(st, "FAILED", traceback.format_exc())
        log(st, "took", round(time.time() - t, 1), "s")
    open(os.path.join(OUT, "log.txt"), "w").write("\n".join(LOG))
