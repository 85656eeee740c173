//! The tantivy schema of an index build and the analyzers its fields use. Both the build and
//! every reader register the analyzers, so a query is tokenised exactly as the passages were.

use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED, STRING,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, NgramTokenizer, RemoveLongFilter, SimpleTokenizer, TextAnalyzer,
};
use tantivy::Index;

/// Analyzer for words: split on non-alphanumerics, lowercase, fold diacritics.
pub const WORDS: &str = "theurian_words";
/// Analyzer for trigrams: every 3-character window, lowercased.
pub const TRIGRAMS: &str = "theurian_trigrams";

/// The fields of one build.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    pub chunk_id: Field,
    pub item_id: Field,
    pub revision_id: Field,
    pub served_sha: Field,
    pub status: Field,
    pub sensitivity: Field,
    pub kind: Field,
    pub heading: Field,
    pub text: Field,
    pub words: Field,
    /// Character trigrams: indexed for the summary forest's node texts only; passages are found
    /// by substring through the run postings ([`super::runs`]).
    pub trigrams: Field,
    pub seq: Field,
}

/// The schema and its field handles.
pub fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let words = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(WORDS)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let trigrams = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TRIGRAMS)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        chunk_id: b.add_text_field("chunk_id", STRING | STORED),
        item_id: b.add_text_field("item_id", STRING | STORED),
        revision_id: b.add_text_field("revision_id", STRING | STORED),
        served_sha: b.add_text_field("served_sha", STORED),
        status: b.add_text_field("status", STRING | STORED),
        sensitivity: b.add_text_field("sensitivity", STRING | STORED),
        kind: b.add_text_field("kind", STRING | STORED),
        // Heading and text live in the passage table (passages.bin), which is what search
        // reads; the fields stay in the schema, neither indexed nor stored, because field
        // order is part of the layout. Storing them doubled the text on disk (170 MB of doc
        // store at 100,000 items) for nothing.
        heading: b.add_text_field("heading", TextOptions::default()),
        text: b.add_text_field("text", TextOptions::default()),
        words: b.add_text_field("words", words),
        trigrams: b.add_text_field("trigrams", trigrams),
        seq: b.add_u64_field("seq", STORED | FAST),
    };
    (b.build(), fields)
}

/// The word analyzer.
pub fn word_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

/// The trigram analyzer.
pub fn trigram_analyzer() -> TextAnalyzer {
    match NgramTokenizer::new(3, 3, false) {
        Ok(tokenizer) => TextAnalyzer::builder(tokenizer).filter(LowerCaser).build(),
        Err(_) => TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(LowerCaser)
            .build(),
    }
}

/// Registers the analyzers on `index`.
pub fn register(index: &Index) {
    index.tokenizers().register(WORDS, word_analyzer());
    index.tokenizers().register(TRIGRAMS, trigram_analyzer());
}
