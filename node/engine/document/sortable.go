package document

import (
	"encoding/binary"
	"math"
	"strconv"
)

// EncodeSortable writes v as 8 big-endian bytes whose unsigned byte order is
// the signed numeric order of v (the sign bit flipped), so numeric terms sort
// correctly in the term dictionary.
func EncodeSortable(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63))
}

// DecodeSortable is the inverse of EncodeSortable; b must hold 8 bytes.
func DecodeSortable(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63))
}

// SortableFloat64 maps f to an int64 whose signed order is f's numeric order
// (Lucene's NumericUtils.doubleToSortableLong).
func SortableFloat64(f float64) int64 {
	bits := int64(math.Float64bits(f))
	return bits ^ ((bits >> 63) & 0x7fffffffffffffff)
}

// Float64FromSortable is the inverse of SortableFloat64.
func Float64FromSortable(v int64) float64 {
	return math.Float64frombits(uint64(v ^ ((v >> 63) & 0x7fffffffffffffff)))
}

// AppendNumericJSON writes v, a numeric doc value of type t, as the JSON
// value a document would give for it: a long or a date (epoch millis, which
// a date field reads back) as an integer, a double as the shortest decimal
// that reads back as the same float64, a boolean as true or false.
func AppendNumericJSON(dst []byte, t FieldType, v int64) []byte {
	switch t {
	case Double:
		return strconv.AppendFloat(dst, Float64FromSortable(v), 'g', -1, 64)
	case Boolean:
		return strconv.AppendBool(dst, v != 0)
	}
	return strconv.AppendInt(dst, v, 10)
}
