package sample

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

var logs = Kind{
	Name: "logs",
	Doc:  "web server access log lines: timestamp (date), level, service, host, method and path (keywords), status, latency_ms and bytes (longs), message (text)",
	Mapping: `{"properties": {"id": {"type": "keyword"}, "timestamp": {"type": "date"}, "level": {"type": "keyword"}, ` +
		`"service": {"type": "keyword"}, "host": {"type": "keyword"}, "method": {"type": "keyword"}, "path": {"type": "keyword"}, ` +
		`"status": {"type": "long"}, "latency_ms": {"type": "long"}, "bytes": {"type": "long"}, "message": {"type": "text"}}}`,
	newGen: newLogs,
}

var services = []string{"checkout", "catalog", "search", "accounts", "payments", "images", "recommendations", "shipping"}

var routes = []struct{ method, path string }{
	{"GET", "/api/products"}, {"GET", "/api/products/{id}"}, {"GET", "/api/search"}, {"POST", "/api/cart"},
	{"GET", "/api/cart"}, {"POST", "/api/checkout"}, {"GET", "/api/orders/{id}"}, {"POST", "/api/login"},
	{"GET", "/healthz"}, {"PUT", "/api/accounts/{id}"}, {"DELETE", "/api/cart/{id}"}, {"GET", "/static/img/{id}.webp"},
}

var failures = []string{"upstream timed out", "connection reset by peer", "payment provider declined the request",
	"database pool exhausted", "invalid session token", "rate limit exceeded", "out of stock during checkout"}

// logsFrom is when the generated log starts: fixed, so output does not
// depend on today's date.
var logsFrom = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

func newLogs(rng *rand.Rand) func(w *docWriter, i int) {
	service := newPicker(rng, services, 0.9)
	route := newSkewed(rng, len(routes), 1.0)
	now := logsFrom
	return func(w *docWriter, i int) {
		now = now.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
		r := routes[route.index()]
		path := strings.Replace(r.path, "{id}", strconv.Itoa(1+rng.IntN(5000)), 1)
		status, level := 200, "info"
		switch x := rng.IntN(100); {
		case x < 3:
			status, level = []int{500, 502, 503}[rng.IntN(3)], "error"
		case x < 9:
			status, level = []int{400, 401, 404, 409, 429}[rng.IntN(5)], "warn"
		case r.method == "POST" && x < 40:
			status = 201
		}
		// Latency: mostly fast, a long tail.
		latency := 2 + int(rng.ExpFloat64()*25)
		if level == "error" {
			latency += 1000 + rng.IntN(4000)
		}
		svc := service.pick()
		msg := fmt.Sprintf("%s %s returned %d in %d ms", r.method, path, status, latency)
		if level != "info" {
			msg += ": " + failures[rng.IntN(len(failures))]
		}
		w.begin()
		w.field("id", fmt.Sprintf("l%07d", i+1))
		w.field("timestamp", now.Format("2006-01-02T15:04:05.000Z07:00"))
		w.field("level", level)
		w.field("service", svc)
		w.field("host", fmt.Sprintf("%s-%d", svc, 1+rng.IntN(4)))
		w.field("method", r.method)
		w.field("path", path)
		w.field("status", status)
		w.field("latency_ms", latency)
		w.field("bytes", 200+rng.IntN(60000))
		w.field("message", msg)
		w.end()
	}
}
