"""Every decoder's drafts on CUDA against the CPU's, on the same prompts (one GPU machine).

    python benchmarks/gpu_decoders.py greedy:1 beam:1 beam:3 superposed:3 branches:3

For each DECODER:K, 40 invoked completions at sampled lines of the first 4 held-out
standard-library files (10 a file, spm, float32, the bundled model), once with
`model.device cpu` and once with `cuda`, each on a fresh Engine; prints how many
completions gave the same drafts (all of them, and the first) and each device's latency
p50, and writes them to $OUT/gpu_compare.json (or ./). Needs a CUDA device.
"""
import json, os, sys, time
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.completion.document import Position
from inkling.lsp.evaluation import held_out_files, sample_lines

def run(device, decoder, k):
    e = Engine(InklingOptions().merged({"model": {"device": device, "dtype": "float32"},
                                        "completion": {"decoder": decoder, "fim_order": "spm"}}))
    e.load_model()
    out, t = [], []
    for f in held_out_files("stdlib")[:4]:
        for no in sample_lines(f.text, 10, 0):
            lines = f.text.split("\n"); tgt = lines[no]
            ind = tgt[:len(tgt) - len(tgt.lstrip())]; lines[no] = ind
            e.open("file:///x.py", "\n".join(lines))
            d = e.complete("file:///x.py", Position(no, len(ind)), k=k, trigger="invoked")
            e.close("file:///x.py")
            out.append([x.text for x in d.drafts]); t.append(d.latency_ms)
    return out, sorted(t)[len(t) // 2]

res = {}
for decoder, k in [tuple((a.split(":")[0], int(a.split(":")[1]))) for a in sys.argv[1:]]:
    cpu, tc = run("cpu", decoder, k)
    gpu, tg = run("cuda", decoder, k)
    same = sum(a == b for a, b in zip(cpu, gpu))
    first = sum(a[:1] == b[:1] for a, b in zip(cpu, gpu))
    res[f"{decoder}-{k}"] = {"completions": len(cpu), "all_drafts_same": same,
                             "first_same": first, "p50_ms_cpu": tc, "p50_ms_cuda": tg}
    print(decoder, k, res[f"{decoder}-{k}"], flush=True)
json.dump(res, open(os.path.join(os.environ.get("OUT", "."), "gpu_compare.json"), "w"), indent=1)
