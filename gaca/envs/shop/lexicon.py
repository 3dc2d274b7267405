"""The shop's words: product categories with their attributes and option types, brands and prices."""

from __future__ import annotations

COLORS = ("black", "blue", "brown", "gray", "green", "navy", "pink", "red", "white", "yellow")
CLOTHING_SIZES = ("xs", "s", "m", "l", "xl", "xxl")
SHOE_SIZES = ("6", "7", "8", "9", "10", "11", "12")

OPTION_VALUES = {"color": COLORS, "size": CLOTHING_SIZES, "shoe size": SHOE_SIZES}
"""Option type -> its values; values never repeat across option types, so a value names its type."""

CATEGORY_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "t-shirt": ("cotton", "polyester", "slim", "loose", "lightweight", "breathable", "vintage", "organic"),
    "hoodie": ("cotton", "fleece", "warm", "loose", "zipper", "lightweight", "vintage", "hooded"),
    "sneakers": ("leather", "lightweight", "breathable", "waterproof", "running", "canvas", "cushioned", "slip-on"),
    "backpack": ("waterproof", "leather", "lightweight", "laptop", "travel", "canvas", "zipper", "padded"),
    "jacket": ("waterproof", "leather", "warm", "lightweight", "hooded", "windproof", "fleece", "zipper"),
    "jeans": ("denim", "stretch", "slim", "loose", "vintage", "cotton", "washable", "cropped"),
    "boots": ("leather", "waterproof", "warm", "suede", "lightweight", "slip-on", "cushioned", "vintage"),
    "dress": ("cotton", "silk", "floral", "long", "sleeveless", "summer", "vintage", "lightweight"),
    "socks": ("cotton", "wool", "warm", "breathable", "athletic", "cushioned", "organic", "washable"),
    "headphones": ("wireless", "bluetooth", "foldable", "lightweight", "waterproof", "padded", "travel", "running"),
    "wallet": ("leather", "slim", "zipper", "travel", "vintage", "canvas", "waterproof", "padded"),
    "sandals": ("leather", "summer", "lightweight", "waterproof", "cushioned", "slip-on", "canvas", "breathable"),
}
"""Category -> the attributes its products draw from; categories are used in this order."""

CATEGORY_OPTIONS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("t-shirt", "hoodie", "jacket", "jeans", "dress", "socks"), ("color", "size")),
    **dict.fromkeys(("sneakers", "boots", "sandals"), ("color", "shoe size")),
    **dict.fromkeys(("backpack", "headphones", "wallet"), ("color",)),
}
"""Category -> its option types in display order."""

CATEGORIES = tuple(CATEGORY_ATTRIBUTES)

BRANDS = ("acme", "apex", "classic", "luna", "nova", "terra", "urban", "zenith")

PRICES_CENTS = tuple(range(499, 10_000, 500))
"""Product prices: 4.99, 9.99, ..., 99.99 dollars (a short list keeps the vocabulary small)."""

PRICE_STEP_CENTS = 1000
"""Instructions bound the price by a multiple of 10 dollars: 10.00, 20.00, ..., 110.00."""
PRICE_BOUNDS_CENTS = tuple(range(PRICE_STEP_CENTS, PRICES_CENTS[-1] + 2 * PRICE_STEP_CENTS, PRICE_STEP_CENTS))


def dollars(cents: int) -> str:
    """23.99 for 2399: the one way prices are written (one vocabulary word)."""
    return f"{cents // 100}.{cents % 100:02d}"
