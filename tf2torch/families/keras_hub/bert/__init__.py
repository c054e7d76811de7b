"""keras-hub's BERT-style encoders (BERT, RoBERTa, DistilBERT, ALBERT, ...): the graph builder."""
