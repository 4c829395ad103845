package esapi

import (
	"net/url"
	"slices"
	"strings"
)

// router matches Elasticsearch's paths. Go's ServeMux cannot hold them:
// "/_tasks/{id}" and "/{index}/_search" both match "/_tasks/_search", and
// Elasticsearch resolves such overlaps by preferring the literal part,
// which ServeMux refuses as a conflict. Here the route whose first
// differing segment is literal wins, and an {index} never starts with "_"
// (index names cannot), so "/_foo" is no handler rather than an index.
type router struct{ routes []*route }

type route struct {
	path    string   // the pattern, "/{index}/_search"
	segs    []string // literal, or "{name}"
	methods map[string]func(*request)
}

func (rt *route) allowed() []string {
	var out []string
	for m := range rt.methods {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

func (rr *router) add(method, path string, h func(*request)) {
	segs := split(path)
	for _, rt := range rr.routes {
		if slices.Equal(rt.segs, segs) {
			rt.methods[method] = h
			return
		}
	}
	rr.routes = append(rr.routes, &route{path: path, segs: segs, methods: map[string]func(*request){method: h}})
}

func split(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

// match finds the most specific route for an escaped path and its
// variables, unescaped.
func (rr *router) match(escaped string) (*route, map[string]string) {
	segs := split(escaped)
	var best *route
	for _, rt := range rr.routes {
		if len(rt.segs) != len(segs) || !rt.matches(segs) {
			continue
		}
		if best == nil || moreSpecific(rt, best) {
			best = rt
		}
	}
	if best == nil {
		return nil, nil
	}
	vars := map[string]string{}
	for i, s := range best.segs {
		if isVar(s) {
			v, err := url.PathUnescape(segs[i])
			if err != nil {
				v = segs[i]
			}
			vars[s[1:len(s)-1]] = v
		}
	}
	return best, vars
}

func isVar(seg string) bool { return strings.HasPrefix(seg, "{") }

func (rt *route) matches(segs []string) bool {
	for i, s := range rt.segs {
		switch {
		case !isVar(s):
			if s != segs[i] {
				return false
			}
		case s == "{index}" && strings.HasPrefix(segs[i], "_") && segs[i] != "_all":
			return false
		}
	}
	return true
}

// moreSpecific: a's first segment that differs in kind from b's is literal.
func moreSpecific(a, b *route) bool {
	for i := range a.segs {
		if av, bv := isVar(a.segs[i]), isVar(b.segs[i]); av != bv {
			return !av
		}
	}
	return false
}
