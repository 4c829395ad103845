package index

import "errors"

// ErrCorrupt marks a file that failed a header, footer or checksum check, or
// whose contents cannot be decoded. It is wrapped with the file name and
// offset; check with errors.Is.
var ErrCorrupt = errors.New("corrupt index")
