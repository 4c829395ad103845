package engine

import (
	"testing"

	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/index"
)

func testCodec(t testing.TB) index.Codec { return codec.New(codec.Options{}) }

var testMerger = DefaultMerger
