"""Import circles between the files of a Rust crate.

Usage: import_circles.py ROOT.rs [ROOT.rs ...]

For each crate root (lib.rs or main.rs) it follows `mod` declarations to
every file, reads each file's `use crate::…`, `use super::…` and path
uses (`crate::a::X`, `super::X`, `child::X`) with comments and strings
blanked, and resolves each to the file that defines the item, following
re-exports. A file that uses an item defined in another is an edge; a
strongly connected component of two or more files is a circle, printed
with the edges inside it. Imports under `#[cfg(test)]` and
`#[cfg(doc)]`, and the crate root's own `pub use` lines (the public
surface, not a dependency), are not edges. Exits 1 if any crate has a
circle. It reads text, not the compiler's resolution: a rare path it
cannot resolve is passed over, never guessed into an edge.
"""
import re, os, sys, collections
ROOTS = sys.argv[1:]

def strip(src):
    # remove comments, strings, char literals; keep newlines
    out=[];i=0;n=len(src)
    while i<n:
        c=src[i]
        if src.startswith('//',i):
            j=src.find('\n',i); j=n if j<0 else j
            out.append(' '*(j-i)); i=j; continue
        if src.startswith('/*',i):
            d=0;j=i
            while j<n:
                if src.startswith('/*',j): d+=1;j+=2
                elif src.startswith('*/',j): d-=1;j+=2
                    
                else: j+=1
                if d==0: break
            out.append(re.sub(r'[^\n]',' ',src[i:j])); i=j; continue
        m=re.match(r'b?r(#*)"',src[i:i+10])
        if m and (i==0 or not (src[i-1].isalnum() or src[i-1]=='_')):
            h=m.group(1); end='"'+h
            j=src.find(end,i+len(m.group(0)))
            j=n if j<0 else j+len(end)
            out.append('""'+re.sub(r'[^\n]','',src[i:j])[:0]+re.sub(r'[^\n]',' ',src[i+2:j])); i=j; continue
        if c=='"':
            j=i+1
            while j<n and src[j]!='"':
                j+= 2 if src[j]=='\\' else 1
            out.append('"'+re.sub(r'[^\n]',' ',src[i+1:j])+'"'); i=j+1; continue
        if c=="'":
            m=re.match(r"'(\\.[^']*|[^\\'])'",src[i:i+12])
            if m: out.append(' '*len(m.group(0))); i+=len(m.group(0)); continue
        out.append(c); i+=1
    return ''.join(out)

def expand(tree):
    # tree: text inside use, e.g. crate::{a::{b,c}, d as e}
    tree=re.sub(r'\s+','',tree)
    res=[]
    def rec(prefix, s):
        # split top-level commas
        parts=[];d=0;cur=''
        for ch in s:
            if ch=='{': d+=1
            if ch=='}': d-=1
            if ch==',' and d==0: parts.append(cur);cur=''
            else: cur+=ch
        if cur: parts.append(cur)
        for p in parts:
            if not p: continue
            if '{' in p:
                k=p.index('{'); pre=p[:k].rstrip(':'); inner=p[k+1:p.rindex('}')]
                rec(prefix+([x for x in pre.split('::') if x] ), inner)
            else:
                name=p.split(' as ')[0] if ' as ' in p else p
                segs=[x for x in name.split('::') if x]
                if segs==['self']: segs=[]
                res.append(prefix+segs)
    rec([], tree)
    return res

class Crate:
    def __init__(s, rootfile):
        s.files={}  # modpath tuple -> file
        s.testfiles=set()
        s.text={}
        s.rawtext={}
        s.load((), rootfile)
    def load(s, mp, f):
        s.files[mp]=f
        raw=open(f).read(); s.rawtext[f]=raw
        t=strip(raw); s.text[f]=t
        d=os.path.dirname(f); b=os.path.basename(f)
        base = d if b in ('lib.rs','main.rs','mod.rs') or mp==() else os.path.join(d, b[:-3])
        for m in re.finditer(r'(?m)^[ \t]*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;', t):
            name=m.group(1)
            # path attr
            before=[]
            for l in reversed(raw[:m.start()].splitlines()):
                if l.strip().startswith('#[') or l.strip().startswith('//'): before.insert(0,l)
                else: break
            pa=None
            for l in before:
                mm=re.search(r'#\[path\s*=\s*"([^"]+)"',l)
                if mm: pa=mm.group(1)
            if pa: cand=[os.path.join(d,pa)]
            else: cand=[os.path.join(base,name+'.rs'),os.path.join(base,name,'mod.rs')]
            for c in cand:
                if os.path.exists(c):
                    if 'cfg(test)' in ''.join(before) or f in s.testfiles: s.testfiles.add(c)
                    s.load(mp+(name,), c); break
            else: print('MISSING mod',name,'in',f,file=sys.stderr)

def inline_mods(t):
    # returns list of (start,end,name) for inline mod blocks
    res=[]
    for m in re.finditer(r'\bmod\s+(\w+)\s*\{', t):
        i=m.end(); d=1
        while i<len(t) and d:
            if t[i]=='{': d+=1
            elif t[i]=='}': d-=1
            i+=1
        res.append((m.start(),i,m.group(1), 'cfg(test)' in t[max(0,m.start()-60):m.start()] or 'cfg(all(test' in t[max(0,m.start()-80):m.start()]))
    return res

ITEM=r'(?:fn|struct|enum|trait|type|const|static|union|macro_rules!)\s+'
def defines(t,name):
    return re.search(r'\b'+ITEM+re.escape(name)+r'\b',t) is not None

def run(rootfile):
    C=Crate(rootfile)
    file2mp={v:k for k,v in C.files.items()}
    # imports per module: name -> list of abs paths
    imports={}
    uses={}  # file -> list of (abs segs, pos, kind)
    def absolutize(mp, segs, inl):
        # inl: inline module depth path appended
        cur=list(mp)+list(inl)
        if not segs: return None
        if segs[0]=='crate': return segs[1:]
        if segs[0]=='$crate': return None
        if segs[0] in ('super','self'):
            i=0
            while i<len(segs) and segs[i] in('super','self'):
                if segs[i]=='super': cur=cur[:-1]
                i+=1
            return cur+segs[i:]
        # relative: child module?
        if tuple(cur+[segs[0]]) in C.files: return cur+segs
        # name imported in this module? (e.g. use super::sibling; then sibling::X)
        return ('REL',segs)
    for mp,f in C.files.items():
        t=C.text[f]
        inl=inline_mods(t)
        def is_test(pos):
            if f in C.testfiles: return True
            if any(a<=pos<b and tt for a,b,n,tt in inl): return True
            # cfg(test) attr right before statement
            pre=t[max(0,pos-120):pos]
            k=pre.rfind(';'); k2=pre.rfind('}')
            seg=pre[max(k,k2)+1:]
            if 'cfg(doc)' in seg: return 'D'
            return 'cfg(test)' in seg
        def inl_at(pos):
            path=[]
            for a,b,n,tt in inl:
                if a<=pos<b: path.append((a,n))
            return [n for a,n in sorted(path)]
        L=[]
        for m in re.finditer(r'(?m)(?:^|[;{}]\s*)(?:#\[[^\]]*\]\s*)*((?:pub(?:\([^)]*\))?\s+)?)use\s+([^;]+);', t):
            pub=bool(m.group(1).strip())
            il=inl_at(m.start(2))
            for segs in expand(m.group(2)):
                a=absolutize(mp,segs,il)
                L.append((a,m.start(2),'use',pub,il,segs,is_test(m.start(2)-4)))
        # inline paths
        usespans=[(m.start(),m.end()) for m in re.finditer(r'\buse\s+[^;]+;',t)]
        def inuse(p): return any(a<=p<b for a,b in usespans)
        for m in re.finditer(r'(?<![\w$:])((?:crate|super|self)(?:::\w+)+)', t):
            if inuse(m.start()): continue
            segs=m.group(1).split('::')
            il=inl_at(m.start())
            a=absolutize(mp,segs,il)
            L.append((a,m.start(),'path',False,il,segs,is_test(m.start())))
        # child module names used bare: child::X
        children=[k[-1] for k in C.files if len(k)==len(mp)+1 and k[:len(mp)]==mp]
        for ch in children:
            for m in re.finditer(r'(?<![\w:$])'+ch+r'::(\w+)', t):
                if inuse(m.start()): continue
                il=inl_at(m.start())
                if il: continue
                L.append((list(mp)+[ch,m.group(1)],m.start(),'path',False,[], [ch,m.group(1)],is_test(m.start())))
        uses[f]=L
    # per-module local import map (name -> abs segs) for following re-exports
    def local_imports(f):
        d={}
        for a,pos,kind,pub,il,segs,tst in uses[f]:
            if kind!='use' or il or not isinstance(a,list) or not a: continue
            d[a[-1]]=a
        return d
    LI={f:local_imports(f) for f in C.files.values()}
    def resolve(a, depth=0):
        # returns file defining the item, or module file
        if not isinstance(a,list): return None
        # longest module prefix
        k=len(a)
        while k>0 and tuple(a[:k]) not in C.files: k-=1
        mod=tuple(a[:k]); f=C.files[mod]; rest=a[k:]
        if not rest or rest==['*'] : return f
        name=rest[0]
        if depth<8 and not defines(C.text[f],name) and name in LI[f]:
            r=resolve(LI[f][name],depth+1)
            if r: return r
        return f
    edges=collections.defaultdict(list)
    for f,L in uses.items():
        for a,pos,kind,pub,il,segs,tst in L:
            if isinstance(a,tuple):  # REL: name imported locally
                segs2=a[1]
                if segs2[0] in LI[f]:
                    a=LI[f][segs2[0]]+segs2[1:]
                else: continue
            if a is None: continue
            tgt=resolve(a)
            if tgt and tgt!=f:
                line=C.text[f][:pos].count('\n')+1
                rootre = (f==C.files[()] and kind=='use')
                edges[(f,tgt)].append((line,'::'.join(segs),('D' if tst=='D' else 'T') if tst else ('R' if rootre else 'P')))
    return C,edges

def scc(nodes,adj):
    idx={};low={};st=[];on=set();res=[];c=[0]
    sys.setrecursionlimit(10000)
    def sc(v):
        idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
        for w in adj.get(v,()):
            if w not in idx: sc(w);low[v]=min(low[v],low[w])
            elif w in on: low[v]=min(low[v],idx[w])
        if low[v]==idx[v]:
            comp=[]
            while True:
                w=st.pop();on.discard(w);comp.append(w)
                if w==v:break
            res.append(comp)
    for v in nodes:
        if v not in idx: sc(v)
    return res

MODE=os.environ.get('MODE','P')
found=0
for root in ROOTS:
    C,edges0=run(root)
    edges={}
    for k,v in edges0.items():
        vv=[x for x in v if x[2] in MODE]
        if vv: edges[k]=vv
    adj=collections.defaultdict(set)
    for (a,b) in edges: adj[a].add(b)
    comps=[c for c in scc(list(C.files.values()),adj) if len(c)>1]
    found+=len(comps)
    print('=====',root,len(C.files),'files',len(edges),'edges; SCCs:',len(comps))
    for comp in comps:
        print(' SCC:',sorted(comp))
        s=set(comp)
        for (a,b),v in sorted(edges.items()):
            if a in s and b in s:
                print('   ',a,'->',b,':',v[:6])
    if os.environ.get('DUMP'):
        for (a,b),v in sorted(edges.items()): print('  E',a,'->',b,v[:4])
sys.exit(1 if found else 0)
