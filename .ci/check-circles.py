#!/usr/bin/env python3
"""No import circle between the files of a crate (docs/ARCHITECTURE.md).

For each crate, a file refers to another when it names it through `crate::`, `super::` or a
child module's path; re-exports are followed to the module that defines the item. A cycle in
that graph is a circle: two files that each need the other cannot be read, tested or moved
alone. Prints every circle and exits 1 when there is one."""
import os, re, glob
def modname(src, path):
    parts=os.path.relpath(path, src)[:-3].split('/')
    if parts[-1] in ('mod','lib','main'): parts=parts[:-1]
    return '::'.join(parts)
bad=False
for src in sorted(glob.glob('crates/*/src')+glob.glob('bins/*/src')):
    files=glob.glob(src+'/**/*.rs', recursive=True)
    mods={modname(src,f):f for f in files}
    texts={}
    for m,f in mods.items():
        t=open(f).read()
        t=re.split(r'#\[cfg\(test\)\]\s*mod tests', t)[0]
        t=re.sub(r'//[^\n]*','',t)
        texts[m]=t
    # re-exports at each module: name -> defining module
    reexp={}
    for m,t in texts.items():
        for mod_path, names in re.findall(r'pub use (?:(?:crate|self)::)?([a-z_][a-z0-9_:]*)::\{([^}]*)\}', t):
            for n in re.split(r'[,\s]+', names):
                n=n.strip()
                if n: reexp[(m,n.split(' as ')[0])]=((m+'::' if m else '')+mod_path).strip(':')
        for mod_path, n in re.findall(r'pub use (?:(?:crate|self)::)?([a-z_][a-z0-9_:]*)::([A-Za-z_][A-Za-z0-9_]*);', t):
            reexp[(m,n)]=((m+'::' if m else '')+mod_path).strip(':')
    def resolve(path):
        parts=path.split('::')
        for k in range(len(parts),0,-1):
            cand='::'.join(parts[:k])
            if cand in mods:
                rest=parts[k:]
                if rest and (cand,rest[0]) in reexp:
                    tgt=reexp[(cand,rest[0])]
                    tgt=tgt if tgt in mods else cand
                    return tgt
                return cand
        if (('',parts[0])) in reexp:
            t=reexp[('',parts[0])]
            return t if t in mods else ''
        return ''
    graph={}
    for m,t in texts.items():
        refs=set()
        for r in re.findall(r'crate::([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)', t):
            refs.add(resolve(r))
        for r in re.findall(r'\bsuper::([A-Za-z_][A-Za-z0-9_]*)', t):
            parent='::'.join(m.split('::')[:-1])
            refs.add(resolve((parent+'::' if parent else '')+r) if (parent+'::'+r).strip(':') in mods or True else parent)
        # children referenced relatively
        for c in mods:
            if c.startswith(m+'::' if m else '') and c!=m and c.count('::')==(m.count('::')+1 if m else 0):
                child=c.split('::')[-1]
                body=re.sub(r'\bmod\s+'+child+r'\s*;','',t)
                if re.search(r'(?<![:\w])'+child+r'::', body):
                    refs.add(c)
        refs.discard(m)
        graph[m]={r for r in refs if r in mods}
    out=[]; color={}; stack=[]
    def dfs(u):
        color[u]=1; stack.append(u)
        for v in sorted(graph.get(u,())):
            if color.get(v)==1: out.append(stack[stack.index(v):]+[v])
            elif color.get(v) is None: dfs(v)
        stack.pop(); color[u]=2
    for u in sorted(graph):
        if color.get(u) is None: dfs(u)
    if out:
        bad=True; print(src, [' -> '.join(x) or '(root)' for x in out])
print('circles: found' if bad else 'circles: none')
raise SystemExit(1 if bad else 0)
