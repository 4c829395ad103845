package dwpt

import "unsafe"

// paged is an append-only array stored in fixed pages, for the per-term and
// per-doc rows that grow to millions of entries. Growing a plain slice by
// 1.25x copies it and leaves the old backing array as garbage — ~4x the
// final size allocated over a DWPT's life, and a transient 2.25x when it
// grows; pages are never copied. The first page starts small and grows like
// a slice, so the many small fields of a DWPT do not each pay a full page.
type paged[T any] struct {
	pages [][]T
	n     int
	pool  *slabPool[T] // recycles full pages (nil: none)
}

const (
	pageShift = 12
	pageSize  = 1 << pageShift
	pageMask  = pageSize - 1
)

func (p *paged[T]) len() int { return p.n }

// at returns a pointer to element i (< len), valid until the DWPT is
// released (pages never move once full; the first page may move while it
// grows, so do not hold the pointer across append).
func (p *paged[T]) at(i int32) *T { return &p.pages[i>>pageShift][i&pageMask] }

func (p *paged[T]) append(v T) {
	if p.n < pageSize {
		if len(p.pages) == 0 {
			p.pages = append(p.pages, nil)
		}
		first := p.pages[0]
		if len(first) == cap(first) && 2*cap(first) >= pageSize {
			// Past half a page the first page becomes a full one, so it
			// can be recycled with the others.
			p.pages[0] = append(p.newPage(), first...)
		}
		p.pages[0] = append(p.pages[0], v)
	} else {
		if p.n&pageMask == 0 {
			p.pages = append(p.pages, p.newPage())
		}
		last := len(p.pages) - 1
		p.pages[last] = append(p.pages[last], v)
	}
	p.n++
}

func (p *paged[T]) ramBytes() int64 {
	var zero T
	n := int64(cap(p.pages)) * 24
	for _, pg := range p.pages {
		n += int64(cap(pg)) * int64(unsafe.Sizeof(zero))
	}
	return n
}

func (p *paged[T]) newPage() []T {
	if p.pool == nil {
		return make([]T, 0, pageSize)
	}
	return p.pool.get(pageSize)
}

// release hands full pages to the pool; the array is empty afterwards.
func (p *paged[T]) release() {
	if p.pool != nil {
		for _, pg := range p.pages {
			p.pool.put(pg, pageSize)
		}
	}
	p.pages, p.n = nil, 0
}
