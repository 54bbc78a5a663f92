#!/usr/bin/python3
"""Deterministic generator of a synthetic online furniture / home-goods catalogue.

Each product is a (name, description) pair of lowercase merchant copy.  The
generator is built so that a small transformer must learn both the language of
product copy and to COPY words of the product name into the description:
product-type families share long prefixes ("patio furniture cover" /
"patio furniture set" / "patio furniture cushions", "coffee table" /
"coffee table set", ...) and many sentences repeat a run of the name followed
by the name's next word, so the continuation is decided by the name only.

Usage:
    /usr/bin/python3 tools/training/corpus.py --seed 2026 --out models/store

Only the Python standard library is used; all randomness comes from a single
random.Random(seed) instance, and nothing depends on hash or set order.
"""

import argparse
import os
import re
import sys

import random

DEFAULT_SEED = 2026
DEFAULT_COUNT = 43000
DEFAULT_VALIDATION = 2500

# ---------------------------------------------------------------------------
# Exemplars
# ---------------------------------------------------------------------------

EXEMPLAR_VALIDATION_NAME = "double chaise patio furniture cover"
EXEMPLAR_VALIDATION_DESCRIPTION = (
    "protect your outdoor patio furniture from harsh elements with this outdoor "
    "patio furniture cover. made of durable water resistant fabric, it keeps your "
    "chaise clean and dry all year."
)
EXEMPLAR_VALIDATION_POSITION = 137  # index inside the validation split (< 300)

EXEMPLAR_TRAIN_NAME = "sled coffee table"

# Hand-written training products containing "this outdoor patio furniture ".
# All other generated descriptions are kept free of that exact phrase, so the
# window-only evidence for "cover" after it stays weak (2 of 7 here).
_PATIO_TRAIN_EXEMPLARS = [
    ("lorana 4 piece wicker patio furniture set",
     "relax in comfort on your deck or porch with this outdoor patio furniture set. "
     "the set includes a loveseat, two armchairs and a glass top coffee table. "
     "weather resistant wicker wraps a sturdy steel frame, and the thick cushions "
     "are covered in fade resistant fabric. spot clean with mild soap and water."),
    ("heavy duty square patio furniture cover",
     "keep rain, snow and dust off your table and chairs with this outdoor patio "
     "furniture cover. the waterproof polyester shell has a drawstring hem and "
     "padded handles for easy removal. it fits square dining sets up to 60 inches wide."),
    ("beige olefin patio furniture cushions",
     "refresh your favorite seats with these cushions. sized to fit most deep seating "
     "frames, this outdoor patio furniture cushions set is filled with plush fiber and "
     "covered in beige olefin that resists fading and mildew. ties keep each cushion in place."),
    ("teak 7 piece patio furniture set",
     "host summer dinners in style with this outdoor patio furniture set made of solid teak. "
     "the extending table seats six, and the chairs stack for easy storage. "
     "teak weathers to a soft silver gray if left untreated."),
    ("lounge chair patio furniture cover",
     "designed for a single lounge chair, this outdoor patio furniture cover shields "
     "your seating from sun, rain and bird droppings. air vents reduce condensation, and "
     "the buckle straps keep it secure in high winds."),
    ("vesko acacia patio furniture collection",
     "mix and match pieces from this outdoor patio furniture collection to build the "
     "perfect patio. every piece is crafted from acacia wood with a natural oil finish. "
     "cushions are sold separately."),
    ("rope weave patio furniture sectional",
     "stretch out with friends on this outdoor patio furniture sectional. hand woven rope "
     "wraps a powder coated aluminum frame, and the modular pieces can be arranged in an "
     "l shape or as separate sofas."),
]

PINNED_VALIDATION = (EXEMPLAR_VALIDATION_NAME,)
PINNED_TRAIN = (EXEMPLAR_TRAIN_NAME,) + tuple(n for n, _ in _PATIO_TRAIN_EXEMPLARS)

CONTROLLED_PHRASE = "this outdoor patio furniture "

ALLOWED_CHARS_RE = re.compile(r"^[a-z0-9 .,\-'\"&/()!]*$")

# ---------------------------------------------------------------------------
# Catalogue vocabulary
# ---------------------------------------------------------------------------

# department -> list of "type phrase:class"
DEPARTMENTS = {
    "living room": [
        "sofa:seat", "sofa cover:slip", "sofa table:table", "sofa bed:seat",
        "sectional sofa:seat", "sectional sofa cover:slip", "loveseat:seat",
        "accent chair:seat", "accent chair cover:slip", "accent chair set:seat",
        "armchair:seat", "recliner:seat", "recliner cover:slip", "chaise lounge:seat",
        "chaise lounge cover:slip", "ottoman:seat", "ottoman slipcover:slip",
        "coffee table:table", "coffee table set:table", "end table:table",
        "end table set:table", "side table:table", "console table:table",
        "tv stand:case", "media console:case", "nesting tables:table",
        "futon:seat", "futon mattress:textile", "rocking chair:seat",
        "swivel chair:seat", "pouf:seat",
    ],
    "bedroom": [
        "bed frame:bed", "platform bed:bed", "upholstered bed:bed", "headboard:bed",
        "bed skirt:textile", "daybed:bed", "canopy bed:bed", "nightstand:case",
        "nightstand set:case", "dresser:case", "dresser mirror:decor", "chest of drawers:case",
        "armoire:case", "vanity table:table", "vanity stool:seat", "bedroom bench:seat",
        "bedroom set:case", "mattress:textile", "mattress topper:textile",
        "mattress protector:textile",
    ],
    "bedding": [
        "duvet cover:textile", "duvet cover set:textile", "duvet insert:textile",
        "comforter:textile", "comforter set:textile", "quilt:textile", "quilt set:textile",
        "sheet set:textile", "fitted sheet:textile", "bed pillow:textile",
        "bed pillow set:textile", "pillowcase set:textile", "throw blanket:textile",
        "weighted blanket:textile", "bedspread:textile",
    ],
    "dining": [
        "dining table:table", "dining table set:table", "dining table pad:linen",
        "dining chair:seat", "dining chair set:seat", "dining chair cushion:cushion",
        "dining chair cover:slip", "dining bench:seat", "dining bench cushion:cushion",
        "bar stool:seat", "bar stool set:seat", "bar stool cushion:cushion",
        "counter stool:seat", "counter stool set:seat", "sideboard:case", "buffet:case",
        "china cabinet:case", "bar cart:table", "bar table:table", "bar table set:table",
        "table runner:linen", "tablecloth:linen", "placemat set:linen",
    ],
    "kitchen": [
        "kitchen island:table", "kitchen island cart:table", "kitchen cart:table",
        "baker's rack:case", "pantry cabinet:case", "spice rack:kitchen",
        "cookware set:kitchen", "knife block set:kitchen", "dinnerware set:kitchen",
        "flatware set:kitchen", "glassware set:kitchen", "mug set:kitchen",
        "serving bowl:kitchen", "serving tray:kitchen", "cutting board:kitchen",
        "canister set:kitchen", "dish rack:kitchen", "utensil holder:kitchen",
        "kitchen mat:rug", "kitchen towel set:linen", "pot rack:kitchen",
        "paper towel holder:kitchen", "wine rack:case",
    ],
    "bath": [
        "bathroom vanity:case", "bathroom vanity top:bath", "bathroom vanity mirror:decor",
        "bathroom vanity light:light", "medicine cabinet:case", "bath towel:linen",
        "bath towel set:linen", "bath towel rack:bath", "towel bar:bath", "towel ring:bath",
        "bath mat:rug", "bath mat set:rug", "bath rug:rug", "shower curtain:linen",
        "shower curtain liner:linen", "shower curtain rod:bath", "shower curtain hooks:bath",
        "shower caddy:bath", "toilet paper holder:bath", "soap dispenser:bath",
        "bathroom accessory set:bath", "over the toilet storage:case", "bath storage cabinet:case",
    ],
    "outdoor": [
        "patio furniture cover:slip", "patio furniture set:outdoor", "patio furniture cushions:cushion",
        "patio dining set:outdoor", "patio dining table:outdoor", "patio dining chair:outdoor",
        "patio dining chair cushion:cushion", "patio chair:outdoor", "patio chair cushion:cushion",
        "patio umbrella:outdoor", "patio umbrella base:outdoor", "patio umbrella cover:slip",
        "patio sofa:outdoor", "patio loveseat:outdoor", "patio sectional:outdoor",
        "patio heater:outdoor", "patio heater cover:slip",
        "chaise lounge chair:outdoor", "chaise lounge cushion:cushion",
        "adirondack chair:outdoor", "adirondack chair cushion:cushion",
        "fire pit:outdoor", "fire pit table:outdoor", "fire pit cover:slip",
        "grill cover:slip", "porch swing:outdoor", "porch swing cushion:cushion",
        "hammock:outdoor", "hammock stand:outdoor", "garden bench:outdoor",
        "garden bench cushion:cushion", "planter:decor", "planter box:decor",
        "planter stand:decor", "outdoor rug:rug", "outdoor bar stool:outdoor",
        "deck box:outdoor", "bistro set:outdoor",
    ],
    "lighting": [
        "pendant light:light", "pendant light kit:light", "chandelier:light",
        "floor lamp:light", "floor lamp shade:light", "table lamp:light",
        "table lamp set:light", "table lamp shade:light", "desk lamp:light",
        "wall sconce:light", "wall sconce set:light", "flush mount light:light",
        "semi flush mount light:light", "ceiling fan:light", "ceiling fan light kit:light",
        "vanity light:light", "string lights:light", "landscape light:light",
        "landscape light set:light", "picture light:light", "island light:light",
        "track light:light",
    ],
    "rugs": [
        "area rug:rug", "area rug pad:rug", "runner rug:rug", "round rug:rug",
        "shag rug:rug", "doormat:rug", "washable rug:rug", "rug pad:rug", "sheepskin rug:rug",
    ],
    "decor": [
        "wall mirror:decor", "wall mirror set:decor", "floor mirror:decor", "wall art:decor",
        "wall art set:decor", "canvas print:decor", "framed print:decor", "wall clock:decor",
        "wall shelf:decor", "wall shelf set:decor", "picture frame:decor",
        "picture frame set:decor", "vase:decor", "vase set:decor", "candle holder:decor",
        "candle holder set:decor", "artificial plant:decor", "artificial tree:decor",
        "decorative tray:decor", "decorative bowl:decor", "throw pillow:linen",
        "throw pillow cover:linen", "throw pillow insert:cushion", "curtain panel:linen",
        "curtain panel set:linen", "curtain rod:decor", "sculpture:decor", "bookends:decor",
    ],
    "storage": [
        "storage bench:seat", "storage cabinet:case", "storage basket:storage",
        "storage basket set:storage", "storage ottoman:seat", "storage bin set:storage",
        "storage shelf:case", "shoe rack:storage", "shoe cabinet:case", "shoe bench:seat",
        "coat rack:storage", "coat rack bench:seat", "hall tree:storage", "closet organizer:storage",
        "closet system:storage", "cube organizer:storage", "laundry hamper:storage",
        "laundry basket:storage", "bookcase:case", "ladder shelf:case", "wall hooks:storage",
        "entryway bench:seat", "entryway cabinet:case",
    ],
    "office": [
        "office chair:seat", "office chair mat:rug", "office chair cushion:cushion",
        "office desk:table", "standing desk:table", "computer desk:table",
        "writing desk:table", "desk organizer:storage", "desk shelf:case",
        "filing cabinet:case", "printer stand:table", "executive desk:table",
        "gaming chair:seat", "drafting table:table", "monitor stand:table",
    ],
    "kids": [
        "kids bed:bed", "kids desk:table", "kids desk set:table", "kids desk chair:seat",
        "kids table and chair set:table", "kids bookcase:case", "kids rug:rug",
        "kids chair:seat", "toy box:storage", "toy storage organizer:storage",
        "bunk bed:bed", "loft bed:bed", "crib:bed", "crib mattress:textile",
        "changing table:case", "rocking horse:decor", "kids tent:decor", "nursery glider:seat",
    ],
}

ROOMS = {
    "living room": ["living room", "family room", "den", "great room", "lounge"],
    "bedroom": ["bedroom", "primary bedroom", "guest room", "suite"],
    "bedding": ["bedroom", "guest room", "primary bedroom", "vacation home"],
    "dining": ["dining room", "breakfast nook", "dining area", "kitchen"],
    "kitchen": ["kitchen", "pantry", "breakfast nook", "galley kitchen"],
    "bath": ["bathroom", "powder room", "primary bath", "guest bath"],
    "outdoor": ["patio", "deck", "backyard", "porch", "garden", "poolside", "balcony"],
    "lighting": ["living room", "entryway", "hallway", "dining room", "bedroom", "foyer"],
    "rugs": ["living room", "bedroom", "hallway", "entryway", "dining room"],
    "decor": ["living room", "bedroom", "entryway", "hallway", "office"],
    "storage": ["entryway", "mudroom", "closet", "garage", "hallway", "laundry room"],
    "office": ["home office", "study", "office", "workspace", "dorm room"],
    "kids": ["kids room", "nursery", "playroom", "bedroom"],
}

MATERIALS = {
    "seat": ["velvet", "linen", "boucle", "leather", "faux leather", "microfiber", "chenille",
             "performance fabric", "tweed", "cotton", "rattan", "oak", "walnut", "acacia"],
    "slip": ["polyester", "waterproof polyester", "oxford fabric", "vinyl", "canvas",
             "stretch jersey", "spandex", "ripstop", "quilted"],
    "table": ["oak", "walnut", "acacia", "mango wood", "pine", "reclaimed wood", "marble",
              "glass", "metal", "iron", "solid wood", "bamboo", "teak", "travertine"],
    "case": ["oak", "walnut", "pine", "engineered wood", "solid wood", "mango wood",
             "rattan", "metal", "acacia", "paulownia", "cane", "birch"],
    "bed": ["upholstered", "solid wood", "metal", "iron", "pine", "velvet", "linen", "oak"],
    "textile": ["cotton", "linen", "velvet", "microfiber", "bamboo", "flannel", "sherpa",
                "jersey", "percale", "sateen", "wool", "polyester", "olefin", "chenille"],
    "outdoor": ["wicker", "teak", "aluminum", "steel", "acacia", "resin", "rattan", "rope",
                "wrought iron", "cast aluminum", "hdpe", "eucalyptus"],
    "light": ["brass", "glass", "metal", "iron", "rattan", "ceramic", "crystal", "chrome",
              "bronze", "seeded glass", "linen", "wood"],
    "rug": ["wool", "jute", "cotton", "polypropylene", "sisal", "seagrass", "shag", "viscose",
            "chenille", "polyester"],
    "decor": ["glass", "ceramic", "metal", "wood", "resin", "brass", "marble", "stoneware",
              "terracotta", "rattan", "concrete", "mango wood"],
    "kitchen": ["stainless steel", "ceramic", "stoneware", "porcelain", "bamboo", "acacia",
                "glass", "cast iron", "enamel", "copper", "marble", "olive wood"],
    "bath": ["stainless steel", "chrome", "brass", "bamboo", "ceramic", "matte steel",
             "aluminum", "teak", "resin", "zinc"],
    "storage": ["wicker", "seagrass", "water hyacinth", "fabric", "metal", "bamboo", "wood",
                "canvas", "felt", "rattan", "wire"],
    "cushion": ["olefin", "sunbrella fabric", "polyester", "cotton", "canvas", "outdoor fabric",
                "microfiber", "velvet", "linen", "acrylic", "memory foam"],
    "linen": ["cotton", "linen", "turkish cotton", "waffle weave", "terry", "polyester", "jacquard",
              "velvet", "burlap", "chambray", "muslin", "organic cotton"],
}

COLOURS = ["white", "black", "gray", "grey", "natural", "espresso", "navy", "blue", "green",
           "sage", "beige", "ivory", "cream", "charcoal", "brown", "tan", "taupe", "red", "rust",
           "blush", "pink", "yellow", "mustard", "teal", "gold", "silver", "bronze", "matte black",
           "brushed nickel", "antique brass", "oil rubbed bronze", "emerald", "olive", "terracotta",
           "light gray", "dark gray", "warm white", "honey", "driftwood", "slate", "coral",
           "lavender", "aqua", "burgundy", "camel", "chestnut", "indigo", "sand", "stone", "black and white"]

STYLES = ["modern", "mid century", "mid-century modern", "farmhouse", "rustic", "industrial",
          "coastal", "bohemian", "traditional", "contemporary", "scandinavian", "transitional",
          "glam", "vintage", "minimalist", "cottage", "art deco", "french country", "boho",
          "retro", "classic", "tropical", "southwestern", "english country", "hollywood regency",
          "nautical", "lodge", "cabin", "desert modern", "organic modern", "old world",
          "victorian", "spanish colonial", "wabi sabi", "japandi", "shaker", "mission"]

FORMS = ["tufted", "channel tufted", "sled", "parsons", "tulip", "pedestal",
          "trestle", "waterfall", "round", "square", "oval", "rectangular", "curved", "slim",
          "oversized", "low profile", "convertible", "adjustable", "folding", "stackable",
          "swivel", "reversible", "handwoven", "hand tufted", "distressed", "geometric",
          "floral", "striped", "abstract", "quilted", "woven", "fluted", "arched",
          "heavy duty", "lightweight"]

NAME_STYLES = STYLES + FORMS

SIZES = {
    "seat": ["small", "large", "oversized", "armless", "wide", "deep seat", "extra wide"],
    "slip": ["small", "medium", "large", "extra large", "double", "round", "square",
             "rectangular", "fitted"],
    "table": ["small", "large", "36 inch", "42 inch", "48 inch", "60 inch", "72 inch",
              "84 inch", "extendable", "counter height", "bar height", "round"],
    "case": ["small", "tall", "wide", "narrow", "6 drawer", "3 drawer", "2 door", "4 door",
             "5 shelf", "low", "30 inch", "60 inch"],
    "bed": ["twin", "full", "queen", "king", "california king", "twin over full", "twin xl"],
    "textile": ["twin", "full", "queen", "king", "18 x 18", "20 x 20", "50 x 60", "84 inch",
                "96 inch", "oversized", "standard", "lumbar"],
    "outdoor": ["small", "large", "9 ft", "11 ft", "2 person", "4 person", "6 person",
                "round", "square", "rectangular"],
    "light": ["mini", "large", "small", "1 light", "3 light", "5 light", "6 light", "52 inch",
              "60 inch", "24 inch", "dimmable", "plug in"],
    "rug": ["2 x 3", "3 x 5", "4 x 6", "5 x 7", "5 x 8", "6 x 9", "8 x 10", "9 x 12",
            "2 x 8", "round 6 ft", "small", "large"],
    "decor": ["small", "large", "tall", "oversized", "24 inch", "30 inch", "36 inch", "mini",
              "round", "rectangular"],
    "kitchen": ["small", "large", "12 piece", "16 piece", "20 piece", "10 inch", "extra large",
                "compact", "2 tier", "3 tier"],
    "bath": ["24 inch", "30 inch", "36 inch", "48 inch", "double", "single", "wall mounted",
             "freestanding", "2 tier", "over the door"],
    "storage": ["small", "large", "2 tier", "3 tier", "4 tier", "5 cube", "9 cube", "collapsible",
                "stackable", "wall mounted", "over the door"],
    "cushion": ["18 x 18", "20 x 20", "22 x 44", "72 x 21", "oversized", "thick", "small", "large",
                "tufted", "reversible", "deep seat"],
    "linen": ["60 x 84", "70 x 72", "72 inch", "90 inch", "108 inch", "84 inch", "oversized",
              "18 x 18", "20 x 20", "14 x 72", "small", "large"],
}

COUNTS = ["set of 2", "set of 4", "set of 6", "set of 3", "2 pack", "4 pack",
          "3 piece", "5 piece", "7 piece", "2 piece", "4 piece", "9 piece"]
COUNT_CLASSES = ("seat", "outdoor", "textile", "cushion", "linen", "decor", "kitchen", "bath", "storage", "light", "rug", "slip")

FEATURES = {
    "seat": ["a kiln dried hardwood frame", "high density foam cushions", "tapered wood legs",
             "a gently curved back", "plush pillow top arms", "removable seat cushions",
             "a tight back and a loose seat", "channel tufting", "button tufting",
             "sinuous spring support", "a 360 degree swivel base", "nailhead trim",
             "a reclining mechanism", "solid wood legs with a walnut finish",
             "a stain resistant weave", "a low slung profile", "a deep seat",
             "a padded footrest", "a sturdy metal base", "a high back"],
    "slip": ["a drawstring hem", "padded handles", "air vents that reduce condensation",
             "buckle straps", "a waterproof backing", "double stitched seams",
             "an elastic hem", "a uv resistant coating", "reinforced corners",
             "a snug stretch fit", "a tear resistant weave", "a storage pouch"],
    "table": ["a lower shelf for storage", "a spacious tabletop", "tapered legs",
              "a lift top", "two hidden drawers", "a sled base", "a trestle base",
              "a pedestal base", "a tempered glass top", "rounded corners",
              "a distressed finish", "an extension leaf", "adjustable leveling feet",
              "a hairpin leg base", "a live edge top", "a marble veneer top",
              "cross braces for stability", "a scratch resistant surface"],
    "case": ["soft close drawers", "adjustable shelves", "metal drawer pulls",
             "full extension glides", "cable management holes", "an anti tip kit",
             "sliding barn doors", "a felt lined top drawer", "cane front doors",
             "a solid wood top", "recessed handles", "a toe kick base", "glass panel doors",
             "six roomy drawers", "an open cubby", "dovetail joinery"],
    "bed": ["a padded headboard", "solid wood slats", "a center support leg",
            "underbed storage drawers", "a low profile frame", "wingback sides",
            "a channel tufted headboard", "no box spring needed", "a built in trundle",
            "guard rails on both sides", "a sturdy ladder", "a sleigh shape"],
    "textile": ["a soft brushed finish", "hidden button closures", "corner ties",
                "deep pockets", "a zipper closure", "a quilted pattern", "hypoallergenic fill",
                "breathable weave", "a reversible design", "fringe trim", "a pom pom trim",
                "a hemstitched border", "a knife edge", "piped edges", "fade resistant fabric",
                "a water resistant finish", "a double sided print", "a cozy waffle texture"],
    "outdoor": ["a powder coated frame", "weather resistant cushions", "all weather wicker",
                "quick drying foam", "rust resistant hardware", "an adjustable backrest",
                "a tilting canopy", "a crank lift", "a slatted tabletop", "an umbrella hole",
                "wide armrests", "stackable chairs", "a built in side table", "a push button tilt",
                "uv resistant fabric", "a propane burner", "a lid for easy storage"],
    "light": ["a dimmable design", "an adjustable height", "a fabric drum shade",
              "a seeded glass shade", "an integrated led", "a pull chain switch",
              "a rotary switch", "an adjustable arm", "a weighted base", "exposed bulbs",
              "a reversible motor", "a remote control", "a rattan shade", "a frosted glass globe",
              "a canopy that covers the junction box", "a 3 way switch", "a usb port in the base"],
    "rug": ["a low pile", "a plush high pile", "a non slip backing", "a hand tufted construction",
            "a power loomed construction", "a distressed pattern", "a medallion pattern",
            "a trellis pattern", "a moroccan pattern", "a faded vintage look", "a fringed edge",
            "a stain resistant fiber", "a machine washable design", "bound edges",
            "a geometric print", "a soft underfoot feel"],
    "decor": ["a beveled edge", "a hand painted finish", "a distressed frame",
              "d rings for easy hanging", "a gallery wrapped canvas", "a glazed finish",
              "a brushed gold finish", "a matte finish", "a silent movement",
              "a hand blown shape", "a sturdy base", "a realistic look", "a rounded top",
              "hidden mounting hardware", "a ribbed texture", "a weathered look"],
    "kitchen": ["a nonstick coating", "riveted handles", "a dishwasher safe design",
                "a full tang blade", "a reactive glaze", "a tempered glass lid",
                "an airtight seal", "a juice groove", "a drip tray", "rubber feet",
                "a magnetic strip", "stackable pieces", "oven safe construction",
                "an induction ready base", "locking casters", "a butcher block top"],
    "bath": ["a rust resistant finish", "concealed mounting hardware", "a soft close door",
             "an undermount sink", "a quartz top", "a pump that dispenses evenly",
             "adjustable shelves", "a rustproof finish", "a tension mount",
             "a weighted bottom", "quick drying fibers", "rounded edges",
             "a mirrored door", "a spring loaded rod", "open shelving"],
    "storage": ["removable liners", "cut out handles", "a foldable design", "sturdy wire frame",
                "adjustable shelves", "a hinged lid", "a cushioned top", "coat hooks",
                "shoe cubbies", "a lift up seat", "stackable bins", "a slim footprint",
                "hanging rods", "a pull out drawer", "label holders"],
    "cushion": ["ties that keep it in place", "a removable zippered cover", "thick polyfill",
                "a high density foam core", "welted edges", "a non slip bottom", "tufted buttons",
                "fade resistant outdoor fabric", "quick drying fill", "a reversible design",
                "a knife edge", "a boxed edge", "mildew resistant fabric", "a plush loft"],
    "linen": ["a hemmed edge", "rust proof grommets", "a rod pocket top", "a soft terry loop",
              "a waffle texture", "a water repellent finish", "reinforced button holes",
              "a tassel trim", "a lined back", "a fringed border", "a woven stripe",
              "a double stitched hem", "a stain resistant finish", "a light filtering weave",
              "quick drying fibers", "an invisible zipper"],
}

USES = {
    "seat": ["binge watching", "curling up with a book", "hosting the holidays", "movie nights", "reading", "entertaining guests", "afternoon naps", "lounging"],
    "slip": ["the off season", "windy climates", "pollen season", "winter storage", "rainy seasons", "pet owners", "everyday protection", "stormy weather"],
    "table": ["puzzles and crafts", "homework", "holiday buffets", "family dinners", "game nights", "morning coffee", "displaying books", "entertaining"],
    "case": ["sweaters and jeans", "board games", "keepsakes", "folded clothes", "linens", "media gear", "books and baskets", "everyday essentials"],
    "bed": ["reading in bed", "slumber parties", "small bedrooms", "restful sleep", "sleepovers", "guests", "lazy weekends", "growing kids"],
    "textile": ["hot sleepers", "chilly mornings", "movie marathons", "cool nights", "cozy evenings", "restful sleep", "layering", "guest rooms"],
    "outdoor": ["fire pit nights", "sunbathing", "garden parties", "summer evenings", "poolside lounging", "backyard barbecues", "morning coffee", "outdoor dinners"],
    "light": ["late night snacks", "dinner parties", "working from home", "reading", "task lighting", "ambient light", "cozy evenings", "entertaining"],
    "rug": ["bare floors", "kids at play", "open floor plans", "high traffic areas", "homes with pets", "cozy evenings", "layering", "busy families"],
    "decor": ["bookshelves", "nightstands", "console tables", "gallery walls", "mantels", "shelves", "entry tables", "seasonal decorating"],
    "kitchen": ["sunday brunch", "baking projects", "family gatherings", "holiday dinners", "everyday cooking", "meal prep", "entertaining", "weeknight meals"],
    "bath": ["shared bathrooms", "relaxing soaks", "rental bathrooms", "busy mornings", "guest baths", "small bathrooms", "spa days", "everyday use"],
    "storage": ["craft supplies", "winter gear", "dorm rooms", "busy mornings", "small spaces", "seasonal items", "toys and shoes", "everyday clutter"],
    "cushion": ["long afternoons outside", "family dinners", "lounging by the pool", "reading",
                "extra comfort", "seasonal refreshes", "hard wooden seats", "backyard parties"],
    "linen": ["holiday tables", "everyday use", "guest baths", "dinner parties", "spa days",
              "privacy and light control", "sunday brunch", "seasonal decorating"],
}

CARE = {
    "seat": ["spot clean with a damp cloth", "vacuum the cushions regularly",
             "blot spills right away", "fluff the cushions often", "use a mild upholstery cleaner"],
    "slip": ["hose it off and let it air dry", "machine wash cold", "brush off debris before storing",
             "wipe clean with mild soap and water", "store it dry when not in use"],
    "table": ["wipe clean with a soft dry cloth", "use coasters to prevent rings",
              "avoid harsh chemical cleaners", "dust with a soft cloth", "keep out of direct sunlight"],
    "case": ["wipe clean with a soft dry cloth", "avoid harsh chemical cleaners",
             "dust regularly with a microfiber cloth", "keep away from heat sources"],
    "bed": ["wipe clean with a damp cloth", "tighten the hardware once a year",
            "spot clean the upholstery", "dust the frame regularly"],
    "textile": ["machine wash cold and tumble dry low", "machine wash on a gentle cycle",
                "dry clean only", "line dry to keep the colors bright", "do not bleach",
                "wash before first use"],
    "outdoor": ["hose it off as needed", "store the cushions indoors in winter",
                "use a furniture cover in the off season", "wipe clean with mild soap and water",
                "apply teak oil once a year"],
    "light": ["dust with a dry cloth", "turn off power before cleaning",
              "wipe the glass with a soft cloth", "use a damp cloth on the base"],
    "rug": ["vacuum regularly", "spot clean with mild detergent", "rotate it every few months",
            "professional cleaning is recommended", "shake it out outdoors", "machine wash cold"],
    "decor": ["dust with a soft cloth", "wipe clean with a damp cloth", "avoid abrasive cleaners",
              "hand wash only", "keep out of direct sunlight"],
    "kitchen": ["hand wash recommended", "dishwasher safe", "oil the wood regularly",
                "dry thoroughly after washing", "avoid metal scouring pads"],
    "bath": ["wipe clean with a soft cloth", "avoid abrasive cleaners", "rinse and let it dry",
             "machine wash warm", "dry thoroughly after each use"],
    "storage": ["spot clean as needed", "wipe clean with a damp cloth", "vacuum dust from the weave",
                "fold flat for storage"],
    "cushion": ["spot clean with mild soap and water", "remove the cover and machine wash cold",
                "store indoors when not in use", "fluff regularly to keep its shape",
                "let it air dry in the sun"],
    "linen": ["machine wash cold and tumble dry low", "machine wash warm with like colors",
              "iron on low if needed", "line dry to prevent shrinking", "do not bleach",
              "wash before first use"],
}

GENERIC_ADJ = ["sturdy", "durable", "versatile", "elegant", "timeless", "charming", "sleek",
               "cozy", "functional", "stylish", "practical", "beautiful", "well made", "handsome",
               "understated", "eye catching", "classic", "inviting", "refined", "simple",
               "graceful", "polished", "airy", "relaxed", "bold", "playful", "chic", "tailored",
               "rugged", "breezy", "luxurious", "space saving", "thoughtful", "dependable",
               "striking", "welcoming", "sophisticated", "hardworking", "easygoing", "modern"]

NICE_NOUN = ["touch", "look", "feel", "vibe", "accent", "finishing touch", "statement", "upgrade"]

PROTECT_FROM = ["harsh elements", "rain and snow", "sun and rain", "dust and debris",
                "spills and stains", "pet hair", "fading and mildew", "scratches", "bird droppings",
                "wind and rain", "everyday wear"]

# ---------------------------------------------------------------------------
# Sentence bank.  Each entry is a template with {slots} and [a|b|c] alternations.
# Slots:  name, tail (last 2-4 name words), type, head (last name word),
#   run (1-3 name words right before the head), ctx (optional adjective + run),
#   brand, mat, colour, style, room, room2, feat, feat2, use, care, adj, adj2,
#   nice, dims, protect, count_phrase, w, h, d, weight, years
# A template is only used when every slot it needs is available.
# ---------------------------------------------------------------------------

OPENERS = [
    "bring [timeless|modern|relaxed|effortless|warm] style to your {room} with this {tail}.",
    "the {name} is a {adj} addition to any {room}.",
    "meet the {tail}, a {adj} choice for your {room}.",
    "[refresh|update|transform|elevate] your {room} with the {adj} {tail}.",
    "if you are looking for a {adj} {type}, the {name} [delivers|checks every box|has you covered].",
    "this {tail} [brings|adds|offers] a {adj} {nice} to your {room}.",
    "[designed|made|built] for everyday living, this {tail} [pairs|blends] [form and function|style and comfort|comfort and durability].",
    "give your {room} a {adj} {nice} with this {style} {type}.",
    "add a {adj} {nice} to any {room} with the {name}.",
    "the {tail} from {brand} [combines|pairs] {adj} design with {adj2} construction.",
    "[inspired by|rooted in] {style} design, this {tail} [suits|fits] any {room}.",
    "[part of|from] the {brand} collection, this {tail} is [built to last|made to impress|ready for years of use].",
    "[create|build|design] the {room} of your dreams [starting with|around|with] this {tail}.",
    "whether you are [refreshing|furnishing|redoing] a {room} or a {room2}, the {tail} [fits right in|is a great pick].",
    "[simple|clean|classic] lines and a {colour} finish make this {tail} [easy to love|a standout|a favorite].",
    "[welcome|introduce] {adj} [comfort|style|function] into your {room} with this {tail}.",
    "this {colour} {type} [is the perfect|makes a smart|offers a] [finishing touch|centerpiece|upgrade] for your {room}.",
    "a [fresh|bold|subtle|soft] take on the [classic|traditional|everyday] {head}, this {tail} [is made for|feels at home in] your {room}.",
    "[say hello to|discover|introducing] the {name}.",
    "[upgrade|complete] your {room} [setup|look|space] with the {tail}.",
    "[our|this] {adj} {type} is [a customer favorite|one of our best sellers|a staff pick].",
    "with its {style} [look|silhouette|profile], the {tail} [anchors|brightens|softens] your {room}.",
    "[every|any] {room} [needs|deserves] a {adj} {head}, and this {tail} [fits the bill|delivers].",
    "[the perfect blend|a happy mix] of [style|form] and [comfort|function], this {tail} is ready for your {room}.",
    "[crafted|designed] with care, the {tail} [adds|lends] {style} charm to your {room}.",
    "for a {adj} {room}, [choose|start with|consider] this {colour} {tail}.",
    "[finally|at last], a {type} that [looks good|works hard] and [lasts|feels great].",
    "this {adj} {tail} [makes|turns] any {room} [feel|look] [finished|complete|inviting].",
]

FEATURE_S = [
    "it [features|boasts|showcases] {feat} and {feat2}.",
    "this {head} [features|includes|comes with] {feat}.",
    "{feat} [gives|lends] the {type} a {adj} [look|profile|feel].",
    "[thanks to|with] {feat}, the {tail} is [easy to use|built for daily use|as practical as it is pretty].",
    "[we love|you will love|customers love] how this {tail} [comes with|offers|boasts] {feat}.",
    "[details like|touches like] {feat} [set it apart|make it special|elevate the design].",
    "the {head} [also has|also features|is finished with] {feat}, [a thoughtful touch|a nice bonus|so it is ready for anything].",
    "[look closely and|up close,] you will [notice|spot|see] {feat} and {feat2}.",
    "with {feat}, this {run} {head} [stands out|is a step above|outshines the rest].",
    "[key features include|highlights include|standout details include] {feat} and {feat2}.",
    "{feat} and {feat2} make the {tail} [a smart choice|a great value|hard to beat].",
    "[designed|built|made] with {feat}, it [holds up|performs|stays looking good] [for years|day after day|season after season].",
    "the [thoughtful|clever|smart] design [includes|adds] {feat}.",
    "{feat} [keeps|makes] [everything|daily use|life] [tidy|simple|easy].",
    "[it is|this one is] [finished|detailed|topped off] with {feat}.",
    "[one of our favorite details|our favorite detail|the best part] [is|has to be] {feat}.",
    "[no need to compromise|you get the best of both worlds], because {feat} [meets|pairs with] {feat2}.",
    "this {tail} [has|offers] {feat}, [which|and it] [adds|brings] {adj} [comfort|appeal|function].",
]

MATERIAL_S = [
    "[crafted|made|built] from {mat}, the {tail} is [built to last|made to last|ready for daily use].",
    "the {head} is [made|crafted|constructed] of {mat} with a {colour} finish.",
    "{mat} construction [gives|lends] this {tail} a {adj} [feel|look|presence].",
    "[its|the] {colour} {mat} [finish|construction|build] [works with|complements|suits] {style} and {style2} [decor|spaces|rooms] alike.",
    "this {tail} is [made of|crafted from] [durable|sturdy|quality|premium] {mat}.",
    "[we used|we chose|made with] {mat} [for a|to give it a] {adj} [finish|feel|look].",
    "[the|its] {mat} [frame|body|build] is [finished|dressed|wrapped] in a {colour} [tone|hue|finish].",
    "[featuring|with] a {mat} [frame|construction|build], this {head} [holds up|stands up] to {use}.",
    "[durable|quality|premium] {mat} and a {colour} [finish|tone] [give|lend] the {type} a {adj} look.",
    "[available in|finished in|shown in] {colour}, the {mat} {head} [blends into|stands out in] any {room}.",
    "[every|each] {head} is [crafted|made] from {mat}, so [no two are exactly alike|it ages beautifully|it feels substantial].",
    "the {colour} {mat} [brings|adds] [warmth|texture|depth] to your {room}.",
]

DIM_S = [
    "it measures {w} inches wide, {d} inches deep and {h} inches high.",
    "the {head} measures {w} x {d} x {h} inches overall.",
    "overall dimensions are {w} inches wide by {d} inches deep by {h} inches tall.",
    "[at|measuring] {w} inches wide, the {tail} [fits|works] in [small|most|larger] spaces.",
    "the {type} [weighs|comes in at] about {weight} pounds [and|but] [is easy to move|feels solid].",
    "[it stands|stands] {h} inches tall and [is|sits] {w} inches wide.",
    "[please|be sure to] measure your space before ordering, since this {head} is {w} inches wide.",
    "[dimensions are|overall size is] {w} inches wide, {d} inches deep and {h} inches high.",
    "the {tail} [holds|supports] up to {weight} pounds.",
    "[a compact|a generous|an ample] {w} inch width [makes it ideal for|suits] {use}.",
]

USE_S = [
    "perfect for {use}, it [fits|works] [beautifully|well|nicely] in a {room} or {room2}.",
    "[pair|style|match] the {tail} with [a|your favorite] {pair} for a [cohesive|pulled together|layered] look.",
    "[ideal|great|perfect] for {use} and {use2}.",
    "use it in the {room}, the {room2} or anywhere you need a {adj} {head}.",
    "[it is|it's] [the perfect|a great|an ideal] [spot|choice|piece] for {use}.",
    "[set it|place it|put it] in your {room} for {use}.",
    "from {use} to {use2}, this {tail} [does it all|handles it all|is up to the task].",
    "[it looks|it feels] [right at home|great|just right] in a {style} {room}.",
    "[whether for|great for] {use} or {use2}, the {head} [delivers|performs|shines].",
    "[add|bring] [a|an extra] {head} to your {room2} [too|as well] for {use}.",
    "[we suggest|try] [pairing|grouping] it with [a|the matching] {pair} [from the same collection|in {colour}|for a finished look].",
    "[families|guests|kids|pets] [will love|will appreciate|can enjoy] this {head} during {use}.",
    "[gift|give] the {tail} [to a new homeowner|for a housewarming|to someone who loves {style} decor].",
    "[it is|this is] a [great|smart|natural] fit for {use} in [small|open|busy] spaces.",
]

CARE_S = [
    "[care is easy|cleaning is simple|caring for it is easy], just {care}.",
    "{care} [to keep it looking new|for best results|to keep it looking its best].",
    "to clean, {care}.",
    "[for best results|for lasting beauty|to extend its life], {care}.",
    "[easy to care for|low maintenance], the {head} [only needs|just needs] [a quick|the occasional] wipe.",
    "for [care|cleaning|upkeep], {care}.",
    "[some|minimal|easy] assembly [is required|required], and [all hardware is included|tools are included|it takes about 30 minutes].",
    "[no|no tools or] assembly [is required|needed], so you can [enjoy|use] it [right out of the box|the day it arrives].",
    "it [arrives|ships] [fully assembled|in one box|flat packed] [for easy setup|with clear instructions|with everything you need].",
    "[backed by|covered by|includes] a {years} year [limited warranty|warranty|manufacturer warranty].",
    "[we recommend|please] {care}.",
    "[keep your|to keep the] {head} [looking fresh|clean|like new], {care}.",
]

COPY_S = [
    # prefix of the name then the same run followed by the name's next word.
    # {nrun}/{nctx} are only available when the run is a noun ("patio furniture",
    # "coffee table", "bed"); {trun}/{tctx} only when the run is the type prefix
    # ("accent" of "accent chair"), while {run} may be any name words ("sage").
    "protect your {nctx} from {protect} with this {nctx} {head}.",
    "[keep|shield] your {nctx} [safe|protected] from {protect} with the {nctx} {head}.",
    "if you [need|want|are shopping for] a {nrun} that [lasts|looks great|works hard], [choose|try|consider] this {nrun} {head}.",
    "upgrade your {nctx} [setup|space|look] with this {nctx} {head}.",
    "give your {nctx} [a fresh look|new life|a lift] with the {nrun} {head}.",
    "{nrun} [lovers|fans|owners] will [appreciate|adore|love] this {nrun} {head}.",
    "not every {run} {head} is [made|built|designed] the same, and this {run} {head} [proves it|is proof|shows why].",
    "your {nctx} [deserves|needs] the best, so [choose|pick|go with] this {nrun} {head}.",
    "[made|designed|sized] to [fit|suit|match] most {trun} [pieces|designs|styles], this {run} {head} [is|makes] a {adj} [pick|choice|buy].",
    "[this|our] {run} {head} [pairs well|goes well|works well] with [any|your] {tctx} [decor|style|setup].",
    "[when it comes to|for] {trun} [style|comfort|function], [nothing beats|few things beat|you cannot beat] a {adj} {run} {head}.",
    "the {nrun} {head} [is|was] [designed|made|built] [for|with] [your|every] {nctx} in mind.",
    "[turn|make] your {nctx} into a [retreat|showpiece|favorite spot] with this {tail}.",
    "[choose|pick] this {tail} [and|to] [enjoy|love] your {nctx} [even more|for years|all year].",
    "if you [love|enjoy] your {nctx}, [you will also|you'll] [love|enjoy] this {nrun} {head}.",
    "[a|the] {nrun} {head} [is|makes] the [easiest|simplest|fastest] way to [refresh|update|protect] your {nctx}.",
    "[complete|finish] your {tctx} [look|setup|space] with the matching {run} {head}.",
    "no {nctx} [is complete|feels finished] without a {nrun} {head} like this one.",
    "[order|add|get] the {nrun} {head} [today|now] and [enjoy|love] your {nctx} [for years to come|all season long|every day].",
    "[this|the] {tail} [is|comes] [ready|built] [for|to handle] {use}.",
    "[when shopping for|if you need] a new {nctx}, [start with|consider|look no further than] this {nrun} {head}.",
    "[after|with] one look at this {tail}, [you will|you'll] [see why|know why] it is a [bestseller|favorite|go to].",
    "the {run} {head} [is|feels] [sturdier|softer|more substantial|better made] than [most|many] [others|we have tested|at this price].",
    "[each|every] {run} {head} is [inspected|checked|looked over] [by hand|twice|carefully] before it ships.",
    "[unlike|compared to] [other|cheaper|ordinary] {trun} [designs|options|models], this {run} {head} [is built to last|holds its shape|keeps its color].",
    "[a|one] {adj} {run} {head} [can|will] [change|transform|brighten] [the way|how] your {room} [feels|looks].",
    "[our|this] {run} {head} [comes in|is offered in] [several|three|five] [sizes|finishes|colors], [so|and] [there is one for every|it suits any] {room}.",
    "[we|our team] [tested|compared|reviewed] [dozens of|many|countless] {trun} [designs|options|samples] [before landing on|to create|while developing] this {run} {head}.",
    "[for the|if you want the] [best|perfect|right] {trun} [look|fit|feel], [go with|pick|choose] a {run} {head} [like this one|from {brand}|in {colour}].",
    "[many|most] {trun} [pieces|buyers|shoppers] [skip|miss|forget] the [details|basics|finish], but this {run} {head} [gets them right|does not|nails it].",
    "[style|dress up|finish] your {tctx} [look|corner|space] with a {colour} {run} {head}.",
    "[here|this] is a {run} {head} [made for|that suits|worthy of] {use}.",
]

LIFE_S = [
    "[picture|imagine] [slow|lazy|quiet] [sunday mornings|weekend afternoons|evenings at home] with [a good book|coffee in hand|friends and family] and this {tail} [nearby|close by|at the center of it all].",
    "[real life|family life|busy households] can be [messy|hectic|hard on furniture], [so|which is why] we [built|designed|made] the {head} to [bounce back|hold up|keep up].",
    "[it is|this is] the kind of {head} you [keep|hold on to] for [years|decades|a long time] and [pass down|move from home to home|never tire of].",
    "[in a|for a|even in a] [small|tiny|compact] [apartment|condo|studio], the {tail} [fits|works|slides] into [tight|narrow|awkward] [corners|spaces|nooks] with ease.",
    "[guests|visitors|friends] [always|often|will] [ask|comment] about [it|the {head}|this piece] [the moment|as soon as] they [walk in|see it|sit down].",
    "[mix|layer|combine] it with [vintage finds|natural textures|bold colors|family heirlooms] for a [collected|curated|personal] [look|feel|space].",
    "[neutral|warm|soft|rich] {colour} [tones|hues|shades] [make it easy|let you] to [restyle|redecorate|swap accents] [with the seasons|whenever you like|year after year].",
    "[from|through] [holidays|birthdays|weeknights] to [weekends|game days|quiet nights], the {tail} is [ready|up] for [it all|anything|whatever comes].",
    "[if|when] you [move|redecorate|downsize], this {head} [moves|comes along|adapts] [with you|easily|without fuss].",
    "[it brings|it adds] [warmth|character|texture|personality] to [rooms|spaces|homes] that [feel|look] [bare|plain|cold|unfinished].",
    "[designers|stylists|our editors] [love|recommend|reach for] {style} pieces like this {head} [for their|because of their] [versatility|clean lines|warmth].",
    "[the result|the outcome|what you get] is a {adj} {head} that [feels|looks] [custom|high end|far pricier than it is].",
    "[set up|style] a [cozy|inviting|calm|bright] [corner|nook|vignette] [around|with] the {tail} and a {pair}.",
    "[because|since] the {head} is [so|quite] {adj}, it [moves|transitions] [easily|effortlessly] from the {room} to the {room2}.",
]

SHIP_S = [
    "[all|the] [necessary|mounting|assembly] hardware [is included|comes in the box|ships with it], [along with|plus] [easy to follow|illustrated|step by step] instructions.",
    "[assembly|setup] takes [about|around|roughly] [15|20|30|45] minutes with [two people|one person|a friend].",
    "[it|the {head}] [ships|arrives|comes] [in protective packaging|carefully packed|in one box] to [prevent|avoid] [damage|scratches|dents] in transit.",
    "[we stand behind|we back] [every|each] {head} with a {years} year [warranty|guarantee|limited warranty].",
    "[returns|exchanges] are [easy|free|simple] within [30|60|90] days [of delivery|if you change your mind|of purchase].",
    "[colors|finishes|tones] may [vary|differ] [slightly|a little] [from screen to screen|due to natural variations|from the photos].",
    "[because|as] [each piece is|it is] [handmade|hand finished|made by hand], [small|slight|minor] [variations|imperfections|differences] [are part of its charm|make it unique|are to be expected].",
    "[this item|the {head}] is [made to order|in stock|ready to ship] and [ships|arrives|leaves our warehouse] [within|in] [2|3|5|7] [business days|days].",
    "[the|this] {head} [requires|needs] [no tools|only a screwdriver|minimal tools] to [assemble|put together|set up].",
    "[white glove|curbside|doorstep|room of choice] delivery [is available|is offered|can be arranged] [for an extra fee|in most areas|at checkout].",
]

CLOSER_S = [
    "[order|add|bring home] the {tail} today.",
    "[shop|order] now and [enjoy|love] your new {head} [for years to come|every day].",
    "[it is|it's] [the|a] {head} you will [reach for|love] [every day|for years].",
    "[add|place] this {tail} in your cart [today|now].",
    "[don't|do not] [miss|wait on] this {adj} {head}.",
    "[make it yours|treat yourself|bring it home] [today|now].",
    "[see|view|explore] the full {brand} collection for [matching|coordinating] pieces.",
    "[enjoy|love] the {tail} [for years to come|season after season|day after day].",
    "this {head} [ships free|ships fast|ships in 2 to 3 days].",
    "[you|your family|your guests] will [love|appreciate|enjoy] the {name}.",
]

PREFIXES = ["", "", "", "", "", "", "", "", "", "", "", "", "", "", "plus, ", "best of all, ", "better yet, ", "what's more, ",
            "also, ", "even better, ", "here's the best part, ", "on the practical side, ",
            "just as important, ", "for good measure, ", "on top of that, ", "in addition, "]

SUFFIXES = [", so you can enjoy it for years", ", making it a smart buy", " for a look you will love",
            ", even in busy homes", ", all at a great price", ", without taking up much space",
            ", a detail we love", " for years of everyday use", ", so it is ready when you are",
            " in a way that feels effortless", ", which our customers rave about",
            ", without sacrificing comfort", ", and it looks good doing it",
            " for a polished finish", ", so there is less to worry about",
            " that will impress your guests", ", season after season", ", just as you would expect",
            " for a relaxed, lived in look", " while keeping things simple"]
SUFFIX_CATS = ("feat", "mat", "use", "copy", "open")

CATEGORIES = [
    ("open", OPENERS), ("feat", FEATURE_S), ("mat", MATERIAL_S), ("dim", DIM_S),
    ("use", USE_S), ("care", CARE_S), ("copy", COPY_S), ("close", CLOSER_S),
    ("life", LIFE_S), ("ship", SHIP_S),
]
_BANK = dict(CATEGORIES)

PAIRS = ["area rug", "accent chair", "side table", "floor lamp", "throw pillow", "coffee table",
         "console table", "wall mirror", "table lamp", "storage basket", "bench", "planter",
         "throw blanket", "dining chair", "nightstand", "bookcase", "pendant light", "runner rug"]

_ALT_RE = re.compile(r"\[([^\[\]]*)\]")
_SLOT_RE = re.compile(r"\{([a-z_0-9]+)\}")

SYLL_ON = ["b", "br", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "st", "t",
           "v", "w", "z", "th", "ch", "sh", "fl", "gr", "tr", "cl", "j"]
SYLL_V = ["a", "e", "i", "o", "u", "a", "e", "o", "ia", "ea", "ou", "ai", "y"]
SYLL_CODA = ["", "", "", "n", "r", "l", "s", "x", "m", "nd", "rk", "lt", "ss", "ve"]


def _brands(rng, n=320):
    out, seen = [], set()
    while len(out) < n:
        k = rng.choice((2, 2, 2, 3))
        w = ""
        for i in range(k):
            w += rng.choice(SYLL_ON) + rng.choice(SYLL_V)
            if i == k - 1:
                w += rng.choice(SYLL_CODA)
        if 4 <= len(w) <= 10 and w not in seen:
            seen.add(w)
            out.append(w)
    return out


def _product_types():
    types = []
    for dept, entries in DEPARTMENTS.items():
        for e in entries:
            phrase, cls = e.split(":")
            types.append((phrase, dept, cls))
    return types


PRODUCT_TYPES = _product_types()

# runs that read as a noun on their own ("protect your ___ from ...")
NOUN_RUNS = frozenset([t[0] for t in PRODUCT_TYPES] + [
    "patio furniture", "bed", "kitchen", "bath", "bathroom", "shower", "office", "patio",
    "garden", "porch", "desk", "toy", "shoe", "closet", "laundry", "wine", "grill", "deck",
    "table", "duvet", "pillow", "curtain", "candle", "kitchen island", "patio dining",
    "bathroom vanity", "chaise lounge", "dining table", "bar table", "kids desk",
    "outdoor patio furniture", "bedroom", "wall", "dresser", "nightstand", "entryway",
])


def _expand(rng, template):
    return _ALT_RE.sub(lambda m: rng.choice(m.group(1).split("|")), template)


def _slots_needed(template):
    return _SLOT_RE.findall(template)


def _dims(rng, cls):
    ranges = {
        "seat": ((24, 96), (28, 40), (30, 40)), "table": ((18, 96), (16, 44), (18, 42)),
        "case": ((20, 72), (14, 22), (24, 72)), "bed": ((40, 86), (76, 92), (36, 60)),
        "outdoor": ((20, 84), (20, 60), (16, 40)), "light": ((6, 52), (6, 30), (10, 70)),
        "decor": ((4, 48), (2, 16), (6, 48)), "kitchen": ((6, 48), (4, 24), (2, 36)),
        "bath": ((6, 48), (4, 22), (4, 36)), "storage": ((12, 48), (10, 20), (10, 72)),
        "textile": ((18, 108), (18, 96), (1, 6)), "slip": ((24, 96), (24, 80), (20, 40)),
        "rug": ((24, 144), (36, 144), (1, 2)), "cushion": ((16, 76), (16, 24), (2, 6)),
        "linen": ((14, 108), (14, 96), (1, 4)),
    }
    (w0, w1), (d0, d1), (h0, h1) = ranges[cls]
    return rng.randint(w0, w1), rng.randint(d0, d1), rng.randint(h0, h1)


def _make_name(rng, brands, ptype):
    phrase, dept, cls = ptype
    tw = phrase.split()
    mats = MATERIALS[cls]
    parts = {}
    if rng.random() < 0.35:
        parts["brand"] = rng.choice(brands)
    if rng.random() < 0.22:
        if cls in COUNT_CLASSES and rng.random() < 0.5 and not phrase.endswith(" set"):
            parts["size"] = rng.choice(COUNTS)
        else:
            parts["size"] = rng.choice(SIZES[cls])
    if rng.random() < 0.35:
        parts["style"] = rng.choice(NAME_STYLES)
    if rng.random() < 0.35:
        parts["colour"] = rng.choice(COLOURS)
    if rng.random() < 0.45:
        parts["mat"] = rng.choice(mats)
    order = ["brand", "size", "style", "colour", "mat"]
    # keep 2..8 words
    while True:
        words = []
        for k in order:
            if k in parts:
                words.extend(parts[k].split())
        words.extend(tw)
        if len(words) <= 8:
            break
        drop = [k for k in order if k in parts]
        del parts[rng.choice(drop)]
    if len(words) < 2:
        k = rng.choice(["style", "colour", "mat"])
        parts[k] = rng.choice(NAME_STYLES if k == "style" else COLOURS if k == "colour" else mats)
        words = []
        for kk in order:
            if kk in parts:
                words.extend(parts[kk].split())
        words.extend(tw)
    return " ".join(words), parts


def _fill(rng, template, slots):
    text = _expand(rng, template)
    # slot values with alternatives: pick fresh values where lists are given
    def rep(m):
        v = slots[m.group(1)]
        return v(rng) if callable(v) else v
    return _SLOT_RE.sub(rep, text)


def _ntokens(text):
    return len(re.findall(r"[a-z0-9']+|[^\sa-z0-9']", text))


_BAD_TAIL_START = frozenset(["of", "piece", "pack", "x", "inch", "ft", "light", "drawer",
                             "door", "shelf", "tier", "cube", "person"])


def _product_slots(rng, brands, name, parts, ptype):
    phrase, dept, cls = ptype
    nw = name.split()
    head = nw[-1]
    rooms = ROOMS[dept]
    room = rng.choice(rooms)
    room2 = rng.choice([r for r in rooms if r != room] or rooms)
    mat = parts.get("mat") or rng.choice(MATERIALS[cls])
    colour = parts.get("colour") or rng.choice(COLOURS)
    style = parts.get("style")
    if style not in STYLES:
        style = rng.choice(STYLES)
    brand = parts.get("brand") or rng.choice(brands)
    feats = FEATURES[cls]
    f1 = rng.choice(feats)
    f2 = rng.choice([f for f in feats if f != f1])
    uses = USES[cls]
    u1 = rng.choice(uses)
    u2 = rng.choice([u for u in uses if u != u1])
    w, d, h = _dims(rng, cls)
    adj = rng.choice(GENERIC_ADJ)
    adj2 = rng.choice([a for a in GENERIC_ADJ if a != adj])
    slots = {
        "name": name, "type": phrase, "head": head, "brand": brand, "mat": mat,
        "colour": colour, "style": style,
        "style2": rng.choice([s for s in STYLES if s != style]),
        "room": room, "room2": room2, "feat": f1, "feat2": f2, "use": u1, "use2": u2,
        "care": rng.choice(CARE[cls]), "adj": adj, "adj2": adj2,
        "nice": rng.choice(NICE_NOUN), "w": str(w), "d": str(d), "h": str(h),
        "weight": str(rng.choice([5, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100, 150, 250, 300])),
        "years": str(rng.choice([1, 1, 2, 3, 5, 10])),
        "protect": rng.choice(PROTECT_FROM),
        "pair": rng.choice([p for p in PAIRS if p != phrase]),
        "_pools": {"feat": feats, "use": uses, "care": CARE[cls],
                   "pair": [p for p in PAIRS if p != phrase]},
    }
    # tail: last 2..4 words of the name (or the whole name if shorter)
    if len(nw) >= 2:
        k = rng.randint(2, min(4, len(nw)))
        while k > 2 and (nw[-k].isdigit() or nw[-k] in _BAD_TAIL_START):
            k -= 1
        slots["tail"] = " ".join(nw[-k:])
        # run: 1..3 words right before the head; prefer the type prefix
        tw = phrase.split()
        type_run = len(tw) >= 2 and rng.random() < 0.7
        if type_run:
            run = tw[:-1]
        else:
            kk = rng.randint(1, min(3, len(nw) - 1))
            while kk > 1 and (nw[-1 - kk].isdigit() or nw[-1 - kk] in _BAD_TAIL_START):
                kk -= 1
            run = nw[-1 - kk:-1]
        slots["run"] = " ".join(run)
        ctx = slots["run"]
        if dept == "outdoor" and "outdoor" not in run and rng.random() < 0.5:
            ctx = "outdoor " + ctx
        elif rng.random() < 0.15:
            ctx = rng.choice(["everyday", "indoor"]) + " " + ctx
        slots["ctx"] = ctx
        if type_run:
            slots["trun"] = slots["run"]
            slots["tctx"] = ctx
        if slots["run"] in NOUN_RUNS:
            slots["nrun"] = slots["run"]
            slots["nctx"] = ctx
    else:
        slots["tail"] = name
    return slots


SOFT_CLASSES = ("textile", "rug", "kitchen", "slip", "cushion", "linen")
_HARD_ONLY_RE = re.compile(r"hardware|assembl|tools|weighs|pounds|inches high|inches tall|stands \{h\}|x \{h\}")


def _redraw(rng, slots):
    """Per-sentence fresh picks for the free (non-name) slots."""
    pools = slots["_pools"]
    for a, b, pool in (("feat", "feat2", pools["feat"]), ("use", "use2", pools["use"]),
                       ("adj", "adj2", GENERIC_ADJ)):
        x = rng.choice(pool)
        y = rng.choice(pool)
        while y == x:
            y = rng.choice(pool)
        slots[a], slots[b] = x, y
    slots["care"] = rng.choice(pools["care"])
    slots["protect"] = rng.choice(PROTECT_FROM)
    slots["nice"] = rng.choice(NICE_NOUN)
    slots["pair"] = rng.choice(pools["pair"])


_AN_RE = re.compile(r"\ba ((?:[aeio]|u(?!s|v|n[i])|hour|honest)[a-z0-9'-]*)")


def _fix_articles(text):
    return _AN_RE.sub(r"an \1", text)


_CAT_LIMIT = {"care": 1, "ship": 1, "dim": 1}


def _make_description(rng, slots, cls):
    """Returns (description, [pattern ids])."""
    n_sent = rng.choice((1, 2, 3, 3, 4, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6))
    cats = []
    if rng.random() < 0.8:
        cats.append("open")
    body = ["feat", "mat", "dim", "use", "care", "copy", "copy", "feat", "use", "mat",
            "life", "ship", "copy"]
    while len(cats) < n_sent:
        c = rng.choice(body)
        if cats.count(c) < _CAT_LIMIT.get(c, 2):
            cats.append(c)
    if rng.random() < 0.3 and len(cats) < 6:
        cats.append("close")
    # light shuffle of the body (keep opener first, closer last)
    first = cats[:1] if cats and cats[0] == "open" else []
    last = cats[-1:] if cats[-1] == "close" else []
    mid = cats[len(first):len(cats) - len(last)]
    rng.shuffle(mid)
    cats = first + mid + last

    sentences, pats, used, used_prefixes = [], [], set(), set()
    for c in cats:
        bank = _BANK[c]
        for _ in range(12):
            i = rng.randrange(len(bank))
            tpl = bank[i]
            if (c, i) in used:
                continue
            if cls in SOFT_CLASSES and _HARD_ONLY_RE.search(tpl):
                continue
            if all(s in slots for s in _slots_needed(tpl)):
                break
        else:
            continue
        _redraw(rng, slots)
        used.add((c, i))
        s = _fill(rng, tpl, slots)
        p = 0
        if c not in ("open",) and sentences:
            p = rng.randrange(len(PREFIXES))
            if PREFIXES[p] and p in used_prefixes:
                p = 0
            used_prefixes.add(p)
        s = PREFIXES[p] + s
        q = 0
        if c in SUFFIX_CATS and s.endswith(".") and "," not in s and rng.random() < 0.3:
            q = 1 + rng.randrange(len(SUFFIXES))
            s = s[:-1] + SUFFIXES[q - 1] + "."
        sentences.append(s)
        pats.append("%s%d.%d.%d" % (c, i, p, q))
    # keep within the context budget
    while len(sentences) > 1 and _ntokens(" ".join(sentences)) > 132:
        sentences.pop()
        pats.pop()
    return _fix_articles(" ".join(sentences)), pats


def _records(seed=DEFAULT_SEED, count=DEFAULT_COUNT):
    rng = random.Random(seed)
    brands = _brands(rng)
    records = []
    seen = set()
    fixed = [(EXEMPLAR_VALIDATION_NAME, EXEMPLAR_VALIDATION_DESCRIPTION, "outdoor",
              "patio furniture cover", ["exemplar"])]
    fixed.append((EXEMPLAR_TRAIN_NAME, None, "living room", "coffee table", None))
    for n, dsc in _PATIO_TRAIN_EXEMPLARS:
        typ = " ".join(n.split()[-3:])
        if typ not in [t[0] for t in PRODUCT_TYPES]:
            typ = "patio furniture set"
        fixed.append((n, dsc, "outdoor", typ, ["exemplar"]))
    type_lookup = {t[0]: t for t in PRODUCT_TYPES}
    for name, dsc, dept, typ, pats in fixed:
        if dsc is None:
            ptype = type_lookup[typ]
            slots = _product_slots(rng, brands, name, {"style": "sled"}, ptype)
            while True:
                dsc, pats = _make_description(rng, slots, ptype[2])
                if CONTROLLED_PHRASE not in dsc + " " and len(pats) >= 4:
                    break
        records.append({"name": name, "description": dsc, "department": dept,
                        "type": typ, "patterns": pats})
        seen.add(name)

    while len(records) < count:
        ptype = rng.choice(PRODUCT_TYPES)
        name, parts = _make_name(rng, brands, ptype)
        if name in seen:
            continue
        seen.add(name)
        if rng.random() < 0.10:
            dsc, pats = "", []
        else:
            slots = _product_slots(rng, brands, name, parts, ptype)
            for _ in range(20):
                dsc, pats = _make_description(rng, slots, ptype[2])
                if CONTROLLED_PHRASE not in dsc + " ":
                    break
            else:
                dsc = dsc.replace(CONTROLLED_PHRASE, "this patio furniture ")
        if not ALLOWED_CHARS_RE.match(dsc) or not ALLOWED_CHARS_RE.match(name):
            raise ValueError("bad characters in %r / %r" % (name, dsc))
        records.append({"name": name, "description": dsc, "department": ptype[1],
                        "type": ptype[0], "patterns": pats})
    # deterministic interleaving: exemplars are not left at the front
    rng.shuffle(records)
    return records


def generate(seed=DEFAULT_SEED, count=DEFAULT_COUNT, with_patterns=False):
    """Returns a list of (name, description) pairs; with_patterns=True returns
    (name, description, pattern_ids) triples (one pattern id per sentence)."""
    recs = _records(seed, count)
    if with_patterns:
        return [(r["name"], r["description"], list(r["patterns"] or [])) for r in recs]
    return [(r["name"], r["description"]) for r in recs]


def generate_records(seed=DEFAULT_SEED, count=DEFAULT_COUNT):
    """Full records (name, description, department, type, patterns) for stats."""
    return _records(seed, count)


def split(products, seed=DEFAULT_SEED, validation=DEFAULT_VALIDATION,
          pin_validation=PINNED_VALIDATION, pin_train=PINNED_TRAIN):
    """Deterministic shuffle + split into (train, validation).

    Products whose name is in pin_validation are placed inside the first 300
    validation products; products whose name is in pin_train are kept in train.
    """
    products = list(products)
    order = list(range(len(products)))
    random.Random(seed).shuffle(order)
    validation = min(validation, len(products))
    val, train = order[:validation], order[validation:]
    name_of = lambda i: products[i][0]
    # move pinned-train items out of validation
    for pos in range(len(val)):
        if name_of(val[pos]) in pin_train:
            for tpos in range(len(train)):
                if name_of(train[tpos]) not in pin_train and name_of(train[tpos]) not in pin_validation:
                    val[pos], train[tpos] = train[tpos], val[pos]
                    break
    # move pinned-validation items into the first 300 validation positions
    slot = min(EXEMPLAR_VALIDATION_POSITION, max(len(val) - 1, 0))
    for pinned in pin_validation:
        idx = [i for i in val if name_of(i) == pinned]
        if idx:
            cur = val.index(idx[0])
            if cur >= 300 and val:
                val[cur], val[slot] = val[slot], val[cur]
                slot = max(slot - 1, 0)
            continue
        idx = [tpos for tpos in range(len(train)) if name_of(train[tpos]) == pinned]
        if idx and val:
            tpos = idx[0]
            val[slot], train[tpos] = train[tpos], val[slot]
            slot = max(slot - 1, 0)
    return [products[i] for i in train], [products[i] for i in val]


def clean_field(text):
    """Field normalisation shared with the WANDS reader."""
    text = (text or "").replace("\t", " ").replace("\r", " ").replace("\n", " ")
    return " ".join(text.lower().split())


def write_tsv(path, products):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("name\tdescription\n")
        for name, desc in products:
            f.write("%s\t%s\n" % (clean_field(name), clean_field(desc)))


def read_tsv(path):
    out = []
    with open(path, encoding="utf-8", newline="\n") as f:
        header = f.readline()
        assert header == "name\tdescription\n", header
        for line in f:
            line = line.rstrip("\n")
            name, _, desc = line.partition("\t")
            out.append((name, desc))
    return out


def write_splits(products, out_dir, seed=DEFAULT_SEED, validation=DEFAULT_VALIDATION):
    train, val = split(products, seed, validation)
    os.makedirs(out_dir, exist_ok=True)
    tmp_t = os.path.join(out_dir, "train.tsv.tmp")
    tmp_v = os.path.join(out_dir, "validation.tsv.tmp")
    write_tsv(tmp_t, train)
    write_tsv(tmp_v, val)
    os.replace(tmp_t, os.path.join(out_dir, "train.tsv"))
    os.replace(tmp_v, os.path.join(out_dir, "validation.tsv"))
    return train, val


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--count", type=int, default=DEFAULT_COUNT)
    ap.add_argument("--validation", type=int, default=DEFAULT_VALIDATION)
    ap.add_argument("--out", default="models/store")
    args = ap.parse_args(argv)
    products = generate(args.seed, args.count)
    train, val = write_splits(products, args.out, args.seed, args.validation)
    print("wrote %d train and %d validation products to %s" % (len(train), len(val), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
