"""European call prices by the Black-Scholes formula: a convex, decreasing curve in the strike."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import norm

from psdsos._validation import RandomStateLike, check_array_2d, check_random_state, check_scalar

__all__ = ["black_scholes_call", "make_option_prices"]


def _check_market(spot, rate, maturity, volatility):
    return (check_scalar(spot, "spot", lower=0.0, lower_inclusive=False),
            check_scalar(rate, "rate"),
            check_scalar(maturity, "maturity", lower=0.0, lower_inclusive=False),
            check_scalar(volatility, "volatility", lower=0.0, lower_inclusive=False))


def _call(K, spot, rate, maturity, volatility):
    vt = volatility * np.sqrt(maturity)
    d1 = (np.log(spot / K) + (rate + 0.5 * volatility**2) * maturity) / vt
    return spot * norm.cdf(d1) - K * np.exp(-rate * maturity) * norm.cdf(d1 - vt)


def black_scholes_call(K: ArrayLike, *, spot: float = 100.0, rate: float = 0.02,
                       maturity: float = 0.5, volatility: float = 0.25) -> NDArray[np.float64]:
    r"""Black-Scholes price of a European call, as a function of the strike.

    .. math::

        C(K) = S\, \Phi(d_1) - K e^{-rT} \Phi(d_2), \qquad
        d_1 = \frac{\log(S/K) + (r + \sigma^2/2)\, T}{\sigma \sqrt T}, \qquad
        d_2 = d_1 - \sigma \sqrt T,

    with :math:`S` = ``spot``, :math:`r` = ``rate`` (continuously compounded, no dividends),
    :math:`T` = ``maturity`` (years), :math:`\sigma` = ``volatility`` and :math:`\Phi` the
    standard normal distribution function.  In the strike it is decreasing and convex:
    :math:`C'(K) = -e^{-rT} \Phi(d_2) \in [-e^{-rT}, 0]` and
    :math:`C''(K) = e^{-rT} \varphi(d_2) / (K \sigma \sqrt T) > 0` (:math:`\varphi` the
    normal density), the no-arbitrage shape of any call-price curve.

    Parameters
    ----------
    K : array-like of shape (n,) or (n, 1)
        Strikes, > 0.
    spot, rate, maturity, volatility : float
        :math:`S > 0`, :math:`r` (any finite real), :math:`T > 0`, :math:`\sigma > 0`.

    Returns
    -------
    price : ndarray of shape (n,)

    Raises
    ------
    ValueError
        For a non-positive or non-finite strike, ``spot``, ``maturity`` or ``volatility``
        <= 0, or a non-finite ``rate``.

    Examples
    --------
    >>> from psdsos.datasets import black_scholes_call
    >>> # Hull, Options, Futures and Other Derivatives: S=42, K=40, r=0.1, T=0.5, sigma=0.2
    >>> round(float(black_scholes_call([40.0], spot=42, rate=0.1, maturity=0.5,
    ...                                volatility=0.2)[0]), 2)
    4.76
    """
    spot, rate, maturity, volatility = _check_market(spot, rate, maturity, volatility)
    K = check_array_2d(K, "K", allow_1d=True)
    if K.shape[1] != 1:
        raise ValueError(f"K must be of shape (n,) or (n, 1), got shape {K.shape}")
    if np.any(K <= 0):
        raise ValueError(f"K must be > 0, got minimum {float(K.min())!r}")
    return _call(K[:, 0], spot, rate, maturity, volatility)


def make_option_prices(n_strikes: int = 40, *, spot: float = 100.0, rate: float = 0.02,
                       maturity: float = 0.5, volatility: float = 0.25, noise: float = 0.05,
                       strike_range: tuple[float, float] = (60.0, 140.0),
                       random_state: RandomStateLike = None
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    r"""Noisy European call quotes across strikes (convex and decreasing in the strike).

    .. math::

        K_i = K_{\min} + (i - 1) \frac{K_{\max} - K_{\min}}{n - 1}, \qquad
        Y_i = C(K_i) + \eta\, \varepsilon_i, \qquad
        \varepsilon_i \overset{iid}{\sim} \mathcal N(0, 1),

    with :math:`C` the Black-Scholes call price (:func:`black_scholes_call`, stated there
    with its parameters) and :math:`\eta` = ``noise`` in price units.  Known shape of the
    truth: convex and decreasing in :math:`K`, slope in :math:`[-e^{-rT}, 0]`.  The noisy
    quotes need not have that shape (with ``noise > 0`` they usually do not).

    Parameters
    ----------
    n_strikes : int, default=40
        Number of strikes, >= 2, equally spaced on ``strike_range``.
    spot : float, default=100.0
        Price of the underlying, > 0.
    rate : float, default=0.02
        Risk-free rate, continuously compounded (any finite real).
    maturity : float, default=0.5
        Time to expiry in years, > 0.
    volatility : float, default=0.25
        Annualized volatility, > 0.
    noise : float, default=0.05
        Standard deviation of the Gaussian noise, in price units, >= 0.
    strike_range : (float, float), default=(60.0, 140.0)
        Smallest and largest strike, 0 < low < high.
    random_state : None, int or numpy.random.Generator, default=None
        Seed of the noise.

    Returns
    -------
    K : ndarray of shape (n_strikes, 1)
        Strikes, increasing.
    price : ndarray of shape (n_strikes,)
        Noisy quotes.
    true_price : ndarray of shape (n_strikes,)
        The Black-Scholes prices :math:`C(K_i)`.

    Raises
    ------
    ValueError
        Naming the argument: ``n_strikes < 2``, ``spot``, ``maturity`` or ``volatility``
        <= 0, ``noise < 0``, a non-finite ``rate``, ``strike_range`` not a pair
        ``0 < low < high``, or an invalid ``random_state``.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.datasets import make_option_prices
    >>> K, price, truth = make_option_prices(20, random_state=0)
    >>> K.shape, price.shape
    ((20, 1), (20,))
    >>> bool(np.all(np.diff(truth) < 0))
    True
    """
    n_strikes = check_scalar(n_strikes, "n_strikes", lower=2, integer=True)
    spot, rate, maturity, volatility = _check_market(spot, rate, maturity, volatility)
    noise = check_scalar(noise, "noise", lower=0.0)
    try:
        low, high = strike_range
    except (TypeError, ValueError):
        raise ValueError(
            f"strike_range must be a pair (low, high), got {strike_range!r}") from None
    low = check_scalar(low, "strike_range[0]", lower=0.0, lower_inclusive=False)
    high = check_scalar(high, "strike_range[1]", lower=low, lower_inclusive=False)
    rng = check_random_state(random_state)
    K = np.linspace(low, high, n_strikes)
    truth = _call(K, spot, rate, maturity, volatility)
    price = truth + noise * rng.standard_normal(n_strikes)
    return K[:, None], price, truth
