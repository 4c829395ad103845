package esjson

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// jsonCase is a document, the message it reads as, and the JSON Marshal
// writes for that message ("" when it is the document itself).
type jsonCase[M any] struct {
	name, in string
	want     M
	out      string
}

func testParse[M any](t *testing.T, cases []jsonCase[M], parse func([]byte) (M, error)) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// testMarshal checks the written JSON and that it reads back to the same
// message.
func testMarshal[M any](t *testing.T, cases []jsonCase[M], parse func([]byte) (M, error), marshal func(M) ([]byte, error)) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			out, err := marshal(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.out
			if want == "" {
				want = tt.in
			}
			if string(out) != want {
				t.Errorf("got  %s\nwant %s", out, want)
			}
			back, err := parse(out)
			if err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			if diff := cmp.Diff(tt.want, back, protocmp.Transform()); diff != "" {
				t.Errorf("round trip through %s (-want +got)\n%s", out, diff)
			}
		})
	}
}

// errorCase is a document and the path and part of the reason of its
// error.
type errorCase struct{ name, in, path, reason string }

func testErrors[M any](t *testing.T, cases []errorCase, parse func([]byte) (M, error), kind error) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse([]byte(tt.in))
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, kind) {
				t.Fatalf("err = %v, want an *Error of %v", err, kind)
			}
			if e.Path != tt.path {
				t.Errorf("path = %q, want %q (%v)", e.Path, tt.path, err)
			}
			if !strings.Contains(e.Reason, tt.reason) {
				t.Errorf("reason = %q, want it to contain %q", e.Reason, tt.reason)
			}
		})
	}
}

// checkStable is the body of the fuzz targets: no panic, errors are
// *Error of kind, and what parses is stable — written back as JSON it
// reads to an equal message, and writing that gives the same bytes.
func checkStable[M proto.Message](t *testing.T, data []byte, kind error, parse func([]byte) (M, error), marshal func(M) ([]byte, error)) {
	m, err := parse(data)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, kind) {
			t.Fatalf("error %v is not an *Error of %v", err, kind)
		}
		return
	}
	if !m.ProtoReflect().IsValid() { // empty input: a nil message
		return
	}
	if _, err := proto.Marshal(m); err != nil {
		t.Fatalf("not a valid message: %v", err)
	}
	out, err := marshal(m)
	if err != nil {
		t.Fatalf("writing a parsed message: %v", err)
	}
	back, err := parse(out)
	if err != nil {
		t.Fatalf("%s reads back with %v", out, err)
	}
	if !proto.Equal(m, back) {
		t.Fatalf("round trip changed the message:\n%v\n%v\nthrough %s", m, back, out)
	}
	if out2, _ := marshal(back); string(out2) != string(out) {
		t.Fatalf("not stable:\n%s\n%s", out, out2)
	}
}
