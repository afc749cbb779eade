"""Tiny random models, built and saved the way real checkpoints are, so backends load them through the same
``from_pretrained(path)`` code users take with real weights. Nothing here downloads anything."""

from __future__ import annotations

from pathlib import Path

QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                "<|image_pad|>", "<|video_pad|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% else %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = ["The robot picks up the red cube and places it on the blue plate.",
          "Describe the image. What objects do you see? A gripper moves a green bowl.",
          '{"answer": "yes", "score": 3} <score>4</score> 0 1 2 3 4 5 6 7 8 9'] * 20


def build_qwen2_vl(folder: Path) -> Path:
    """A Qwen2-VL with two 32-wide text layers and one vision block: about 200k parameters."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from tokenizers import decoders as tk_decoders
    from transformers import Qwen2TokenizerFast, Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl import Qwen2VLImageProcessorPil

    folder.mkdir(parents=True, exist_ok=True)
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = tk_decoders.ByteLevel()
    raw.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=400, special_tokens=QWEN_SPECIAL,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    raw.save(str(folder / "tokenizer.json"))
    tokenizer = Qwen2TokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", unk_token=None)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in QWEN_SPECIAL}
    config = Qwen2VLConfig(
        text_config={"vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 512,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [4, 2, 2]},
                     "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
                     "pad_token_id": ids["<|endoftext|>"]},
        vision_config={"depth": 1, "embed_dim": 16, "hidden_size": 32, "num_heads": 2, "mlp_ratio": 2,
                       "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "in_channels": 3},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(0)
    model = Qwen2VLForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.save_pretrained(folder)
    Qwen2VLImageProcessorPil(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 16).save_pretrained(folder)
    return folder


WORDS = ["red", "green", "blue", "yellow", "cube", "ball", "bowl", "plate", "gripper", "table", "a", "photo", "of",
         "the", "cup", "block", "object"]


def _bert_vocab() -> dict[str, int]:
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", *WORDS]
    return {token: index for index, token in enumerate(tokens)}


def build_grounding_dino(folder: Path) -> Path:
    """Grounding DINO with a Swin backbone of width 8 and an 8-wide BERT (recipe in ../shared/ENVIRONMENT.md)."""
    import torch
    from transformers import (
        BertConfig,
        BertTokenizerFast,
        GroundingDinoConfig,
        GroundingDinoForObjectDetection,
        GroundingDinoProcessor,
        SwinConfig,
    )
    from transformers.models.grounding_dino import GroundingDinoImageProcessorPil

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = BertTokenizerFast(vocab=_bert_vocab(), do_lower_case=True)
    backbone = SwinConfig(embed_dim=8, depths=[1, 1, 1, 1], num_heads=[1, 1, 1, 1], window_size=4, image_size=224,
                          out_indices=[2, 3, 4], out_features=["stage2", "stage3", "stage4"])
    text = BertConfig(vocab_size=len(_bert_vocab()), hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                      intermediate_size=16, max_position_embeddings=64)
    config = GroundingDinoConfig(backbone_config=backbone, text_config=text, d_model=32, encoder_layers=1,
                                 decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
                                 encoder_ffn_dim=32, decoder_ffn_dim=32, num_queries=10, num_feature_levels=3,
                                 encoder_n_points=1, decoder_n_points=1, max_text_len=32)
    torch.manual_seed(0)
    GroundingDinoForObjectDetection(config).eval().save_pretrained(folder)
    image_processor = GroundingDinoImageProcessorPil(size={"shortest_edge": 128, "longest_edge": 192})
    GroundingDinoProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def build_clip(folder: Path) -> Path:
    """CLIP with 16-wide one-layer text and vision towers and a word-level BPE over a small tag vocabulary."""
    import torch
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor, CLIPTokenizer
    from transformers.models.clip import CLIPImageProcessorPil

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1, "!": 2}
    for word in WORDS:
        vocab[f"{word}</w>"] = len(vocab)
    (folder / "vocab.json").write_text(__import__("json").dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(vocab_file=str(folder / "vocab.json"), merges_file=str(folder / "merges.txt"))
    config = CLIPConfig(
        text_config={"vocab_size": len(vocab), "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "max_position_embeddings": 32, "bos_token_id": 0, "eos_token_id": 1,
                     "pad_token_id": 1},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 8},
        projection_dim=16)
    torch.manual_seed(0)
    CLIPModel(config).eval().save_pretrained(folder)
    image_processor = CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def build_instruct_pix2pix(folder: Path) -> Path:
    """A StableDiffusionInstructPix2PixPipeline of tiny UNet, VAE and CLIP text encoder (32x32 images)."""
    import torch
    from diffusers import (
        AutoencoderKL,
        EulerAncestralDiscreteScheduler,
        StableDiffusionInstructPix2PixPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(8, 16), layers_per_block=1, sample_size=16, in_channels=8,
                                out_channels=4, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=16,
                                norm_num_groups=4, attention_head_dim=2)
    vae = AutoencoderKL(block_out_channels=[8, 16], in_channels=3, out_channels=3,
                        down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
                        up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"], latent_channels=4,
                        norm_num_groups=4, sample_size=32)
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1, "!": 2}
    for word in [*WORDS, "make", "turn", "into", "remove", "change", "to"]:
        vocab[f"{word}</w>"] = len(vocab)
    tokens = folder / "tokenizer_src"
    tokens.mkdir(exist_ok=True)
    (tokens / "vocab.json").write_text(__import__("json").dumps(vocab))
    (tokens / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(vocab_file=str(tokens / "vocab.json"), merges_file=str(tokens / "merges.txt"),
                              model_max_length=16)
    text_encoder = CLIPTextModel(CLIPTextConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32,
                                                num_hidden_layers=1, num_attention_heads=2,
                                                max_position_embeddings=16, bos_token_id=0, eos_token_id=1,
                                                pad_token_id=1))
    pipeline = StableDiffusionInstructPix2PixPipeline(
        vae=vae, unet=unet, text_encoder=text_encoder, tokenizer=tokenizer,
        scheduler=EulerAncestralDiscreteScheduler(beta_schedule="scaled_linear"), safety_checker=None,
        feature_extractor=None, image_encoder=None, requires_safety_checker=False)
    pipeline.save_pretrained(folder)
    return folder
