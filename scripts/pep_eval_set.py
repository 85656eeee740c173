"""Maps tests/fixtures/evaluations/peps.yaml (answers named `pep-NNNN`) to the item ids of a PEP
corpus project written by `theurian bench search --docs <python/peps/peps> --keep DIR`, whose
items are numbered by document order, and writes the result where `theurian eval` reads it.

Usage: python3 scripts/pep_eval_set.py DIR/corpus [tests/fixtures/evaluations/peps.yaml]
"""
import os, re, sys

project = sys.argv[1]
source = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), '..', 'tests', 'fixtures', 'evaluations', 'peps.yaml')
knowledge = os.path.join(project, '.theurian', 'knowledge', 'generated')
item_of = {}
for name in os.listdir(knowledge):
    with open(os.path.join(knowledge, name), encoding='utf-8') as f:
        found = re.search(r'^PEP:\s*(\d+)', f.read(4000), re.M)
    if found:
        item_of['pep-%04d' % int(found.group(1))] = name[:-len('.md')]
text = open(source, encoding='utf-8').read()
missing = sorted(set(re.findall(r'pep-\d{4}', text)) - set(item_of))
if missing:
    sys.exit('the corpus lacks ' + ', '.join(missing))
mapped = re.sub(r'pep-\d{4}', lambda m: item_of[m.group(0)], text)
target = os.path.join(project, '.theurian', 'evaluations')
os.makedirs(target, exist_ok=True)
with open(os.path.join(target, 'peps.yaml'), 'w', encoding='utf-8') as f:
    f.write(mapped)
print('wrote', os.path.join(target, 'peps.yaml'))
