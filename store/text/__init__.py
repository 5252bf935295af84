"""The text wing: pure rules over text, no Redis and no model. How text becomes search terms
(terms.py), time words in a query (time_words.py), the passage of a long text that answers
(passage.py), private data masked before storing (private_data.py, spans.py), which sentences
state a fact and which a forget request means (fact_sentences.py, forget_by_meaning.py), when
two memories say the same (sameness.py), and token counting (tokens.py)."""
