package sample

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

var products = Kind{
	Name: "products",
	Doc:  "catalog entries: title and description (text), sku, brand, category and tags (keywords), price and rating (doubles), stock (long), published (boolean), updated_at (date)",
	Mapping: `{"properties": {"id": {"type": "keyword"}, "sku": {"type": "keyword"}, "title": {"type": "text"}, ` +
		`"description": {"type": "text"}, "brand": {"type": "keyword"}, "category": {"type": "keyword"}, "tags": {"type": "keyword"}, ` +
		`"price": {"type": "double"}, "stock": {"type": "long"}, "rating": {"type": "double"}, "published": {"type": "boolean"}, ` +
		`"updated_at": {"type": "date"}}}`,
	newGen: newProducts,
}

// category is a kind of product: its nouns, the adjectives and materials
// that fit them, and a price range.
type category struct {
	name       string
	nouns      []string
	adjectives []string
	materials  []string
	minPrice   float64
	maxPrice   float64
}

var categories = []category{
	{"kitchen", []string{"water bottle", "chef's knife", "frying pan", "coffee grinder", "cutting board", "tea kettle", "mixing bowl", "french press", "spice rack", "dutch oven"},
		[]string{"insulated", "non-stick", "compact", "heavy-duty", "stackable", "dishwasher-safe"}, []string{"stainless steel", "cast iron", "bamboo", "ceramic", "glass", "copper"}, 8, 180},
	{"outdoor", []string{"tent", "sleeping bag", "camping stove", "headlamp", "hiking backpack", "trekking poles", "water filter", "hammock", "camp chair", "rain jacket"},
		[]string{"lightweight", "waterproof", "packable", "windproof", "four-season", "ultralight"}, []string{"ripstop nylon", "aluminium", "recycled polyester", "titanium", "waxed canvas", "merino wool"}, 15, 420},
	{"electronics", []string{"wireless headphones", "bluetooth speaker", "usb-c charger", "power bank", "mechanical keyboard", "webcam", "smart plug", "e-reader", "fitness tracker", "monitor stand"},
		[]string{"wireless", "noise-cancelling", "fast-charging", "rechargeable", "portable", "ergonomic"}, []string{"aluminium", "recycled plastic", "stainless steel", "tempered glass", "silicone"}, 12, 350},
	{"home", []string{"throw blanket", "desk lamp", "wall clock", "storage basket", "picture frame", "doormat", "bookshelf", "floor cushion", "table runner", "candle holder"},
		[]string{"handmade", "minimalist", "vintage", "soft", "dimmable", "oversized"}, []string{"wool", "linen", "oak", "rattan", "cotton", "brass"}, 6, 260},
	{"sports", []string{"yoga mat", "running shoes", "jump rope", "foam roller", "cycling gloves", "swim goggles", "resistance bands", "kettlebell", "tennis racket", "climbing chalk bag"},
		[]string{"non-slip", "breathable", "adjustable", "cushioned", "quick-dry", "reflective"}, []string{"natural rubber", "recycled mesh", "neoprene", "cork", "carbon fibre", "memory foam"}, 5, 210},
	{"books", []string{"field guide to birds", "sourdough cookbook", "atlas of rivers", "history of navigation", "guide to night skies", "book of knots", "garden planner", "mountain anthology"},
		[]string{"illustrated", "annotated", "pocket", "revised", "collector's", "large-print"}, nil, 7, 65},
	{"toys", []string{"building blocks", "wooden train set", "puzzle", "kite", "marble run", "board game", "plush bear", "science kit"},
		[]string{"educational", "colourful", "classic", "magnetic", "glow-in-the-dark", "cooperative"}, []string{"beech wood", "recycled cardboard", "organic cotton", "natural rubber"}, 9, 120},
	{"garden", []string{"watering can", "pruning shears", "raised bed", "seed tray", "garden hose", "compost bin", "bird feeder", "trowel"},
		[]string{"rust-proof", "collapsible", "ergonomic", "frost-resistant", "self-watering", "heavy-duty"}, []string{"galvanised steel", "ash wood", "recycled plastic", "terracotta"}, 6, 190},
}

var brands = []string{"Northwind", "Alder & Oak", "Bluepeak", "Corvid", "Driftline", "Emberly", "Fieldnote", "Granite Co", "Hollow Pine",
	"Ironbark", "Juniper", "Kestrel", "Lumen", "Marlow", "Nimbus", "Otterbox Lane", "Pebble", "Quarry", "Redfern", "Saltmarsh",
	"Tidewater", "Umber", "Vantage", "Wren", "Yarrow", "Zephyr"}

var productTags = []string{"bestseller", "new", "eco", "gift", "sale", "limited", "bundle", "refurbished", "handmade", "award-winning", "made-in-eu", "vegan"}

var features = []string{
	"Built to last for years of daily use.",
	"Backed by a two-year warranty.",
	"Ships in plastic-free packaging.",
	"Easy to clean and quick to dry.",
	"Designed with feedback from professionals.",
	"Fits in a carry-on bag.",
	"Tested to work from -10 to 40 degrees.",
	"Made from responsibly sourced materials.",
	"Assembles in minutes without tools.",
	"A favourite of reviewers for its value.",
	"Quiet in use and gentle on surfaces.",
	"Available in three colours.",
}

// updatedFrom is the start of the updated_at range: fixed, so output does
// not depend on today's date.
var updatedFrom = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)

func newProducts(rng *rand.Rand) func(w *docWriter, i int) {
	names := make([]string, len(categories))
	for i, c := range categories {
		names[i] = c.name
	}
	cats := newPicker(rng, names, 0.8)
	brand := newPicker(rng, brands, 1.1)
	tags := newPicker(rng, productTags, 0.9)
	byName := map[string]category{}
	for _, c := range categories {
		byName[c.name] = c
	}
	const span = 3 * 365 * 24 * time.Hour
	return func(w *docWriter, i int) {
		c := byName[cats.pick()]
		noun := c.nouns[rng.IntN(len(c.nouns))]
		adj := c.adjectives[rng.IntN(len(c.adjectives))]
		b := brand.pick()
		title := titleCase(adj + " " + noun)
		var desc strings.Builder
		fmt.Fprintf(&desc, "%s %s %s by %s", article(adj), adj, noun, b)
		if len(c.materials) > 0 {
			material := c.materials[rng.IntN(len(c.materials))]
			title = titleCase(adj + " " + material + " " + noun)
			desc.WriteString(", made of " + material)
		}
		desc.WriteByte('.')
		for _, k := range rng.Perm(len(features))[:1+rng.IntN(3)] {
			desc.WriteString(" " + features[k])
		}
		// Prices cluster at the low end of the category's range, and end in .99 or .49.
		f := rng.Float64()
		price := float64(int(c.minPrice+(c.maxPrice-c.minPrice)*f*f)) + []float64{0.99, 0.49, 0.0}[rng.IntN(3)]
		stock := 0
		if rng.IntN(10) > 0 {
			stock = rng.IntN(500)
		}
		rating := float64(20+rng.IntN(31)) / 10 // 2.0 to 5.0
		updated := updatedFrom.Add(time.Duration(rng.Int64N(int64(span)))).Truncate(time.Second)

		w.begin()
		w.field("id", fmt.Sprintf("p%06d", i+1))
		w.field("sku", fmt.Sprintf("%s-%s-%04d", strings.ToUpper(c.name[:3]), strings.ToUpper(b[:2]), rng.IntN(10000)))
		w.field("title", title)
		w.field("description", desc.String())
		w.field("brand", b)
		w.field("category", c.name)
		w.field("tags", tags.distinct(rng.IntN(4)))
		w.field("price", price)
		w.field("stock", stock)
		w.field("rating", rating)
		w.field("published", rng.IntN(8) > 0)
		w.field("updated_at", updated.Format(time.RFC3339))
		w.end()
	}
}

// titleCase capitalizes each word but short linking ones ("atlas of
// rivers" -> "Atlas of Rivers").
func titleCase(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		if i == 0 || !slices.Contains([]string{"of", "to", "and", "the", "for"}, w) {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

// article is "An" before a vowel sound (as far as these words go), else "A".
func article(word string) string {
	if strings.ContainsAny(word[:1], "aeiou") {
		return "An"
	}
	return "A"
}
