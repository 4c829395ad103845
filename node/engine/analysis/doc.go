// Package analysis turns field text into indexed terms: the tokenizer and
// token filters of Lucene's analysis chain, fused per analyzer so that the
// indexing hot path does no per-token allocation.
//
// An Analyzer appends tokens to a Buffer: term bytes go into the Buffer's
// byte arena and each document.Token's Term aliases that arena, so after the
// buffer has grown to fit a typical document, analysis allocates nothing.
// Analyzers keep scratch state and are used by one goroutine at a time; get
// one per goroutine from New (the registry) or a constructor.
//
// Analyzers, by registry name (Lucene/Elasticsearch behaviour in brackets):
//
//   - "standard": Unicode word segmentation (UAX #29, clipperhouse/uax29),
//     keeping segments that contain a letter or a digit, lower-cased per code
//     point, tokens longer than MaxTokenLength bytes dropped (their position
//     is still consumed, so phrases do not match across them). No stop
//     words, no stemming [StandardAnalyzer with an empty stop set].
//   - "cjk": as standard, plus width folding (full-width ASCII to ASCII,
//     half-width katakana to full width) and contiguous runs of Han,
//     Hiragana, Katakana and Hangul emitted as overlapping bigrams; a lone CJK
//     character is a unigram [CJKAnalyzer: CJKWidthFilter, LowerCaseFilter,
//     CJKBigramFilter; without its English stop words].
//   - "keyword": the whole value as one token, unchanged [KeywordAnalyzer].
//   - "whitespace": split on Unicode white space, no lower-casing
//     [WhitespaceAnalyzer].
//   - "simple": maximal runs of letters, lower-cased [SimpleAnalyzer].
//
// Differences from Lucene worth knowing: Lucene measures the maximum token
// length in UTF-16 units and (since 7.0) splits longer tokens instead of
// dropping them; emoji segments, which Lucene emits as <EMOJI> tokens, are
// dropped here. Invalid UTF-8 in the input becomes U+FFFD in terms, so every
// term is valid UTF-8.
//
// Positions start at the pos argument and grow by one per token; Analyze
// returns the position after the last token, which callers use to continue
// positions across the values of a multi-valued field.
package analysis
