// Package search runs queries over the segments of one point-in-time shard
// reader: Lucene's IndexSearcher / Weight / Scorer / Collector, simplified.
//
// # Model
//
// A Searcher holds []Leaf — one index.LeafReader per segment with its live
// docs and DocBase (hits carry shard-local doc ids, DocBase + segment doc).
// Queries are plain Go values (TermQuery, BooleanQuery, PhraseQuery,
// TermsQuery, RangeQuery, IDsQuery, MatchAllQuery, MatchNoneQuery,
// ConstantScoreQuery, BoostQuery, and the MatchQuery constructor for an
// analyzed `match`); the node server builds them from protobuf. A search
// binds the query to index-wide statistics (a weight), then per leaf makes
// a scorer: an iterator over matching docs that can score the current doc.
// Scorers may be two-phase (phrases, must_not): the iteration is a cheap
// approximation and a match is confirmed afterwards, so a conjunction
// leap-frogs on doc ids first (Advance on the rarest clause) and reads
// positions only for docs every clause contains. Deleted docs are dropped
// at collection, before any two-phase check or scoring. A Searcher is safe
// for concurrent searches (per-search state is pooled); a search polls its
// context every 4,096 docs, so timeouts stop it inside a segment and it
// returns the context's error.
//
// # Scoring
//
// BM25 exactly as Lucene's BM25Similarity (k1 = 1.2, b = 0.75, no (k1+1)
// factor): idf = ln(1 + (N - n + 0.5)/(n + 0.5)) with N the field's doc
// count and n the term's doc freq, both summed over all leaves (deleted
// docs included, as Lucene); avgdl = sumTotalTermFreq / N; lengths come
// from the one-byte norms (index.NormTable), and the per-norm term
// 1/(k1·(1-b+b·len/avgdl)) is precomputed per field per query in a
// 256-entry table. Fields without norms count as length 1. Phrases use the
// phrase frequency (sloppy: Σ 1/(1+distance)) and the sum of their terms'
// idfs. Boosts multiply; filter, must_not and constant-score queries do not
// score (a bool with only filters scores 0; with only must_not it matches
// every other doc with score 0, as Elasticsearch). Clause scores are summed
// in float64 and rounded once, which makes a sum independent of the order
// clauses are visited in — pruned and exhaustive searches return
// bit-identical scores.
//
// # Top-k and pruning
//
// Hits by score keep a heap of k; ties go to the smaller doc id. The hit
// count is exact until Request.TotalHitsThreshold (default 10,000, as
// Elasticsearch's track_total_hits). From then on the worst kept score
// is the minimum competitive score, and scorers skip what cannot beat it:
//
//   - a term (and an exact phrase, a conjunction, must+should) checks the
//     per-block bound of its impacts — for a term the best BM25 over the
//     block's competitive (freq, norm) pairs when the codec keeps them
//     (index.BlockImpactsEnum: the block's exact max score), else
//     BM25(block max freq, block min norm); for a conjunction the sum of
//     its clauses' bounds — and jumps whole blocks of 128 docs (Lucene's
//     ImpactsDISI / block-max conjunction): advanceShallow walks the skip
//     data past every block that cannot compete and only the next block
//     that can is decoded (for the peers' frequent terms on the corpus,
//     706 of 2,594 blocks, vs 2,178 with the (max freq, min norm) bound);
//   - a pure disjunction — alone or filtered, bool{must: match, filter:
//     ...} — runs block-max MaxScore (Lucene 9.9's MaxScoreBulkScorer): in
//     windows ending at block boundaries the clauses whose summed bounds
//     cannot reach the minimum are non-essential, only the other clauses'
//     docs are visited (leap-frogging with the filter), and non-essential
//     clauses are consulted per candidate only while the score can still
//     compete. Without a filter, several essential clauses are gathered
//     per inner window of 4,096 doc ids into a bitset and a score array,
//     one clause at a time (Lucene's per-window bitset scoring). A single
//     essential term (filtered or not) is iterated directly with BM25
//     inline, and docs below a per-window threshold on freq×norm factor
//     (exact: BM25 is monotone in it) are dropped before the division and
//     before the filter's two-phase check.
//
// Term scorers' impacts enums are recycled across the searches of one
// Searcher (index.ImpactsReuser, pooled per leaf and field with the query
// context), so a top-k term query allocates no postings enum.
//
// Once pruning starts the count is a lower bound (Relation "gte"). The
// value reported is the number of docs actually counted (>= the
// threshold); the coordinator sums shards and clamps to its own threshold.
//
// # Sorting and search_after
//
// Request.Sort orders by _score, _doc (shard-local doc id, index order),
// numeric doc values (long, date, boolean; double as
// document.SortableFloat64 bits, which sort like the doubles), or keyword
// sorted doc values (byte order), each ascending or Desc; docs without a
// value sort last in either direction unless MissingFirst. Ties on every
// key go to the smaller doc id. Keyword keys compare segment ordinals per
// doc; the heap's bottom and the search_after value are resolved to
// ordinals once per leaf (2·ord, or 2·ord-1 between two ordinals).
//
// Hits carry SortValues that merge across shards with CompareSortValues:
// Float for _score, Int for numeric fields and _doc, Bytes (owned) for
// keywords, Missing for docs without a value. search_after takes the
// previous page's last SortValues: a doc comes after it if it sorts
// strictly after, or — when Request.SearchAfterDoc >= 0 — it ties and has a
// greater doc id (Lucene's FieldDoc paging). With SearchAfterDoc < 0 every
// tie is skipped, as Elasticsearch does; deep paging should therefore
// either pass the last hit's Doc on the same point-in-time reader or end
// the sort with a unique tiebreaker such as _doc. Doc ids are only stable
// within one point-in-time reader.
//
// Sorted by _doc ascending a search stops as soon as it has k hits and has
// counted to the threshold; with search_after on _doc it jumps to the
// first doc after it once the threshold is counted. Size 0 only counts,
// using per-leaf counts without iteration where they are known (a term
// without deletions: its doc freq; match_all: live docs) and stopping at
// the threshold otherwise.
//
// # Cost
//
// Every query is linear in the postings it reads: conjunctions in their
// rarest clause (Advance uses skip data), disjunctions in the sum of their
// clauses (a heap of clause heads), ranges and terms queries with more than
// 16 matching terms in a leaf OR their postings into one bitset (reusing
// one PostingsEnum), except that a range filtering a selective conjunction
// (the other required clauses match under 1/8 of the leaf) checks each
// candidate's doc value instead when the field is single-valued in the
// leaf (Lucene's IndexOrDocValuesQuery idea), so a match query with a wide
// date filter costs the match's postings, not the range's; phrases in
// their conjunction plus the positions of candidate docs, sorting in the
// matching docs times one doc-values read per key.
package search
