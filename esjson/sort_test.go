package esjson

import (
	"testing"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestParseSort(t *testing.T) {
	asc, desc := sluicev1.SortOrder_SORT_ORDER_ASC, sluicev1.SortOrder_SORT_ORDER_DESC
	testParse(t, []jsonCase[[]*sluicev1.SortField]{
		{"empty", ``, nil, ""},
		{"one name", `"year"`, []*sluicev1.SortField{{Field: "year"}}, ""},
		{"list of every form", `[{"year":{"order":"desc","missing":"_first"}},{"title.raw":"ASC"},"_score",{"_doc":{"order":"asc"}},{"n":{"missing":"_last"}}]`,
			[]*sluicev1.SortField{{Field: "year", Order: desc, MissingFirst: true}, {Field: "title.raw", Order: asc},
				{Field: "_score"}, {Field: "_doc", Order: asc}, {Field: "n"}}, ""},
		{"one object, several keys in order", `{"b":"desc","a":"asc"}`, []*sluicev1.SortField{{Field: "b", Order: desc}, {Field: "a", Order: asc}}, ""},
		{"shard doc", `["_shard_doc"]`, []*sluicev1.SortField{{Field: "_shard_doc"}}, ""},
	}, ParseSort)
}

func TestParseSortErrors(t *testing.T) {
	testErrors(t, []errorCase{
		{"number", `[1]`, "[0]", "a sort key must be a field name or an object, got a number"},
		{"bad order", `{"year":"up"}`, "year", `Unknown SortOrder ["up"]`},
		{"bad order in options", `[{"year":{"order":1}}]`, "[0].year.order", "Unknown SortOrder [1]"},
		{"field option", `[{"year":{"mode":"min"}}]`, "[0].year.mode", "[field_sort] unknown field [mode]"},
		{"unmapped_type", `[{"year":{"unmapped_type":"long"}}]`, "[0].year.unmapped_type", "[field_sort] unknown field [unmapped_type]"},
		{"custom missing", `[{"year":{"missing":0}}]`, "[0].year.missing", "missing must be _first or _last"},
		{"missing on score", `[{"_score":{"missing":"_last"}}]`, "[0]._score.missing", "[_score] unknown field [missing]"},
		{"script sort", `[{"_script":{"type":"number"}}]`, "[0]._script", "[_script] sort is not supported"},
		{"geo sort by name", `["_geo_distance"]`, "[0]", "[_geo_distance] sort is not supported"},
		{"empty name", `[""]`, "[0]", "a sort key needs a field name"},
		{"options not an object", `[{"year":[1]}]`, "[0].year", "must be an object, got an array"},
	}, ParseSort, ErrInvalidSort)
}
