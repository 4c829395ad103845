package mapping

import "time"

// parseDate reads Elasticsearch's default date format,
// strict_date_optional_time||epoch_millis, trying them in that order:
// yyyy[-MM[-dd[THH:mm[:ss[.fraction]]]]] with an optional zone (Z, ±HH:mm,
// ±HHmm or ±HH; none means UTC), else a string of digits as epoch
// milliseconds. It returns epoch milliseconds. Written by hand because time.Parse needs a string (an
// allocation per value) and knows one layout per call.
func parseDate(b []byte) (int64, bool) {
	if v, ok := parseISODate(b); ok {
		return v, true
	}
	return parseEpochMillis(b)
}

func parseISODate(b []byte) (int64, bool) {
	p := dateParser{b: b}
	year, ok := p.num(4)
	if !ok {
		return 0, false
	}
	month, day := 1, 1
	var hour, minute, sec, nanos, offset int
	if p.sep('-') {
		if month, ok = p.num(2); !ok || month < 1 || month > 12 {
			return 0, false
		}
		if p.sep('-') {
			if day, ok = p.num(2); !ok || day < 1 || day > daysIn(year, month) {
				return 0, false
			}
			if p.sep('T') {
				if hour, ok = p.num(2); !ok || hour > 23 || !p.sep(':') {
					return 0, false
				}
				if minute, ok = p.num(2); !ok || minute > 59 {
					return 0, false
				}
				if p.sep(':') {
					if sec, ok = p.num(2); !ok || sec > 59 {
						return 0, false
					}
					if p.sep('.') || p.sep(',') {
						if nanos, ok = p.fraction(); !ok {
							return 0, false
						}
					}
				}
				if offset, ok = p.zone(); !ok {
					return 0, false
				}
			}
		}
	}
	if p.i != len(b) {
		return 0, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nanos, time.UTC)
	return t.UnixMilli() - int64(offset)*60_000, true
}

// parseEpochMillis reads an optionally negative run of digits.
func parseEpochMillis(b []byte) (int64, bool) {
	digits := b
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if len(digits) < len(b) {
		v = -v
	}
	return v, true
}

type dateParser struct {
	b []byte
	i int
}

func (p *dateParser) sep(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// num reads exactly n digits.
func (p *dateParser) num(n int) (int, bool) {
	if len(p.b)-p.i < n {
		return 0, false
	}
	v := 0
	for _, c := range p.b[p.i : p.i+n] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	p.i += n
	return v, true
}

// fraction reads 1 to 9 fractional-second digits as nanoseconds.
func (p *dateParser) fraction() (int, bool) {
	v, n := 0, 0
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		if n == 9 {
			return 0, false
		}
		v = v*10 + int(p.b[p.i]-'0')
		n++
		p.i++
	}
	if n == 0 {
		return 0, false
	}
	for ; n < 9; n++ {
		v *= 10
	}
	return v, true
}

// zone reads an optional zone and returns its offset from UTC in minutes.
func (p *dateParser) zone() (int, bool) {
	if p.i == len(p.b) || p.sep('Z') {
		return 0, true
	}
	sign := 1
	switch {
	case p.sep('+'):
	case p.sep('-'):
		sign = -1
	default:
		return 0, false
	}
	h, ok := p.num(2)
	if !ok || h > 18 {
		return 0, false
	}
	m := 0
	if p.sep(':') || p.i < len(p.b) {
		if m, ok = p.num(2); !ok || m > 59 {
			return 0, false
		}
	}
	return sign * (h*60 + m), true
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
