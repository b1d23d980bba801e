"""ISO 4217 currencies and their minor units: what a price list's ``currency`` may name.

The minor unit is the number of decimals a line's cost is rounded to (EUR 2, JPY 0, KWD 3). The
table holds the active codes of ISO 4217's list one; funds and precious metals (XAU, XDR...) are
not currencies an invoice is written in, and are left out on purpose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

_ZERO = "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF"
_THREE = "BHD IQD JOD KWD LYD OMR TND"
_FOUR = "CLF UYW"
_TWO = (
    "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BRL BSD BTN BWP BYN BZD "
    "CAD CDF CHF CNY COP CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD "
    "GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD LSL MAD "
    "MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP "
    "PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS "
    "TMT TOP TRY TTD TWD TZS UAH USD UYU UZS VES VED WST XCD XCG YER ZAR ZMW ZWG"
)

#: Code -> minor unit (decimals of the smallest coin an invoice names).
MINOR_UNITS: Final[Mapping[str, int]] = {
    **dict.fromkeys(_TWO.split(), 2),
    **dict.fromkeys(_ZERO.split(), 0),
    **dict.fromkeys(_THREE.split(), 3),
    **dict.fromkeys(_FOUR.split(), 4),
}
