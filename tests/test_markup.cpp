// attn/view/markup.hpp: text made safe for HTML and XML content and quoted attributes.
#include <doctest/doctest.h>
#include <attn/view/markup.hpp>

#include <string>

TEST_CASE("markup_escape: the five predefined entities, everything else as it is") {
    CHECK(attn::markup_escape("a < b && c > \"d\" 'e'") == "a &lt; b &amp;&amp; c &gt; &quot;d&quot; &apos;e&apos;");
    CHECK(attn::markup_escape("") == "");
    CHECK(attn::markup_escape("café </w> ▁") == "café &lt;/w&gt; ▁");  // UTF-8 untouched
    CHECK(attn::markup_escape("&amp;") == "&amp;amp;");                // escaped again, not recognised
    const std::string nul("a\0b", 3);
    CHECK(attn::markup_escape(nul) == nul);
}
