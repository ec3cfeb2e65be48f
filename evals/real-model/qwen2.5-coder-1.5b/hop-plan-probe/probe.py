# Sends the hop plan prompt (prompts/json/hop_plan.txt, as ongraph renders it) for the dev
# questions of PQ-2H and PQ-3H to a llama-cpp-python server; prints planned hops against true.
import json, sys, urllib.request, collections
port = sys.argv[1]
tpl = open('/work/main/prompts/json/hop_plan.txt').read()
system = open('/work/main/prompts/system.txt').read().strip()
schema = {"type": "object", "properties": {"chain": {"type": "array", "items": {"type": "string", "maxLength": 60}, "minItems": 1, "maxItems": 5}}, "required": ["chain"], "additionalProperties": False}
out = open('/tmp/og/planprobe/plans.jsonl', 'a')
for f in ['PQ-2H', 'PQ-3H']:
    lines = open(f'/work/shared/datasets/pathquestion/{f}.txt').read().splitlines()
    for l in open(f'/tmp/og/devq-{f}/records.jsonl'):
        r = json.loads(l)
        q, _, path = lines[r['index']].split('\t')
        topic = path.split('#')[0].replace('_', ' ')
        prompt = tpl.replace('{{question}}', r['question']).replace('{{topic_entity}}', topic)
        body = {"model": "x", "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                "temperature": 0, "max_tokens": 256, "response_format": {"type": "json_object", "schema": schema}}
        req = urllib.request.Request(f'http://127.0.0.1:{port}/v1/chat/completions', json.dumps(body).encode(), {'Content-Type': 'application/json'})
        reply = json.load(urllib.request.urlopen(req, timeout=900))['choices'][0]['message']['content']
        try: chain = json.loads(reply)['chain']
        except Exception: chain = None
        rec = {"file": f, "index": r['index'], "question": r['question'], "hops": r['hops'], "chain": chain, "reply": reply}
        out.write(json.dumps(rec) + '\n'); out.flush()
