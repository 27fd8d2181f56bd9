#!/usr/bin/env python3
"""Write a tiny llama-architecture GGUF model with random weights.

Used by scripts/llama-server.sh inside localhost/lazyagent-llama:sid, at the
start of every fixture server: the model is written at test time, never
downloaded or stored. It is not a language model: its replies are noise. What
it gives the tests is a *real* OpenAI-compatible server (llama.cpp's
llama-server) answering a real protocol: usage counts, finish reasons,
response_format grammars (json_object, json_schema), tool-call parsing, error
bodies.

Shape: 2 layers, 64 wide, 4 heads, feed-forward 128, f32; ~0.5 MB. The
vocabulary is a SentencePiece ("llama") one: <unk> <s> </s>, the 256 byte
tokens, and the printable ASCII characters (space as U+2581) as normal tokens.
With byte tokens alone llama.cpp's grammar sampler cannot make progress (it
matches grammar against the text of normal tokens), so the characters a JSON
grammar needs must be normal tokens.

The weights come from a seeded generator: with temperature 0 the same request
gets the same reply from the same llama.cpp build.

usage: tiny_model.py OUT.gguf [--seed N] [--context N]
"""
import argparse

import numpy as np
import gguf

N_EMBD = 64
N_FF = 128
N_LAYER = 2
N_HEAD = 4
BIAS_DIM_VALUE = 1.0  # hidden dimension 0 of every token embedding
BIAS_DIM_NORMED = 2.0  # ~ its value after RMS norm (the other 63 dims have rms 0.5)


def vocabulary():
    tokens, types = [], []

    def add(text, kind):
        tokens.append(text)
        types.append(kind)

    add("<unk>", gguf.TokenType.UNKNOWN)
    add("<s>", gguf.TokenType.CONTROL)
    add("</s>", gguf.TokenType.CONTROL)
    for b in range(256):
        add("<0x%02X>" % b, gguf.TokenType.BYTE)
    add("\u2581", gguf.TokenType.NORMAL)  # SentencePiece's space
    for c in range(0x21, 0x7F):
        add(chr(c), gguf.TokenType.NORMAL)
    return tokens, types


def main():
    ap = argparse.ArgumentParser(description="write a tiny random-weights llama GGUF model")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=20261203)
    ap.add_argument("--context", type=int, default=8192)
    ap.add_argument("--quote-bias", type=float, default=6.0,
                    help="logit bonus of '\"' (ends strings); other logits spread ~4")
    ap.add_argument("--close-bias", type=float, default=4.0, help="logit bonus of '}' and ']'")
    ap.add_argument("--brace-after-newline-bias", type=float, default=20.0,
                    help="logit bonus of '{' right after a newline")
    ap.add_argument("--high-byte-malus", type=float, default=8.0,
                    help="logit malus of the byte tokens 0x80-0xFF (invalid UTF-8 alone)")
    args = ap.parse_args()

    tokens, types = vocabulary()
    n_vocab = len(tokens)
    rng = np.random.default_rng(args.seed)

    def weights(*shape, scale=0.5):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name("lazyagent-tiny-random")
    w.add_context_length(args.context)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * n_vocab)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    # numpy shapes are (rows, columns) = (out, in); GGUF stores them reversed.
    embd = weights(n_vocab, N_EMBD)
    embd[:, 0] = BIAS_DIM_VALUE
    # Hidden dimension 1 says "the last token was a newline" (the layers do
    # not write dimensions 0 and 1).
    embd[:, 1] = 0.0
    embd[tokens.index("<0x0A>"), 1] = BIAS_DIM_VALUE
    w.add_tensor("token_embd.weight", embd)
    for i in range(N_LAYER):
        p = "blk.%d." % i
        w.add_tensor(p + "attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v"):
            w.add_tensor(p + name + ".weight", weights(N_EMBD, N_EMBD, scale=0.1))
        # The layers never write hidden dimensions 0 and 1 (the rows of the
        # output projections are zero): those carry the token's own features
        # below, untouched by what attention mixes in from other positions.
        attn_output = weights(N_EMBD, N_EMBD, scale=0.1)
        attn_output[:2, :] = 0.0
        w.add_tensor(p + "attn_output.weight", attn_output)
        w.add_tensor(p + "ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", weights(N_FF, N_EMBD, scale=0.1))
        w.add_tensor(p + "ffn_up.weight", weights(N_FF, N_EMBD, scale=0.1))
        ffn_down = weights(N_EMBD, N_FF, scale=0.1)
        ffn_down[:2, :] = 0.0
        w.add_tensor(p + "ffn_down.weight", ffn_down)
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    output = weights(n_vocab, N_EMBD)
    # Hidden dimension 0 carries a constant (every token embeds BIAS_DIM_VALUE
    # there and the layers do not write it), and the output rows of
    # '"', '}' and ']' read it: a built-in logit bonus for ending strings and
    # containers. Without it greedy decoding of random weights falls into a loop
    # inside a JSON string and runs to the end of the context.
    output[:, 0] = 0.0
    output[:, 1] = 0.0
    # After a newline, '{' gets a bonus: a reply then opens a JSON object at
    # once. Chat templates end the generation prompt with a newline, so a
    # template whose tool calls are bare JSON objects (Llama 3.x style) gets a
    # tool call as its first token, which tool_choice "required" needs from a
    # model that would otherwise babble forever (the grammar lets content come
    # first). Inside JSON strings a raw newline cannot occur.
    output[tokens.index("{"), 1] = args.brace_after_newline_bias / BIAS_DIM_NORMED
    for ch, bonus in (('"', args.quote_bias), ("}", args.close_bias), ("]", args.close_bias)):
        output[tokens.index(ch), 0] = bonus / BIAS_DIM_NORMED
    # Byte tokens 0x80-0xFF alone make invalid UTF-8; llama-server then fails a
    # reply it parses (HTTP 500 "does not match the expected ... format"). They
    # get a malus so that replies stay mostly ASCII (control bytes stay likely).
    for b in range(0x80, 0x100):
        output[tokens.index("<0x%02X>" % b), 0] = -args.high_byte_malus / BIAS_DIM_NORMED
    w.add_tensor("output.weight", output)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
