//! Rothermel's (1972) surface fire spread model, with Albini's (1976) corrections, as BehavePlus
//! computes it.
//!
//! # Units
//! The model works in its original US units: lengths in ft, time in min, heat in BTU, mass in lb.
//! Loads are lb/ft², SAV 1/ft, bulk density lb/ft³, reaction intensity BTU/ft²/min, heat per unit
//! area BTU/ft², wind speeds ft/min (1 mi/h = 88 ft/min), rates of spread ft/min
//! (× [`M_PER_FT`] for m/min; 1 ch/h = 1.1 ft/min). Moisture contents are fractions of dry weight.
//!
//! # Equations (Rothermel 1972 numbering; Albini 1976; Andrews 2018, RMRS-GTR-371)
//! - Weights: `A_ij = σ_ij·w_ij/ρ_p`, `f_ij = A_ij/A_i`, `f_i = A_i/A_T`; net loads use the
//!   size-class sums `g_ij` (BehavePlus bins SAV at 1200, 192, 96, 48, 16 /ft).
//! - `σ = Σ f_i Σ f_ij σ_ij`; `β = Σ w_ij/(ρ_p δ)`; `β_op = 3.348 σ^-0.8189`.
//! - `Γ' = Γ'_max (β/β_op)^A e^{A(1-β/β_op)}`, `Γ'_max = σ^1.5/(495 + 0.0594 σ^1.5)`,
//!   `A = 133 σ^-0.7913`.
//! - `I_R = Γ' Σ_i w_n,i h η_M,i η_s` with `η_M = 1 - 2.59r + 5.11r² - 3.52r³`, `r = M/M_x`
//!   (0 once `r ≥ 1`), `η_s = 0.174 S_e^-0.19` (at most 1).
//! - Live moisture of extinction: `M_x,live = 2.9 W' (1 - M_f,dead/M_x,dead) - 0.226`, at least
//!   `M_x,dead`, with `W' = Σ_dead w e^{-138/σ} / Σ_live w e^{-500/σ}` and `M_f,dead` the
//!   `w e^{-138/σ}`-weighted dead moisture.
//! - `ξ = e^{(0.792 + 0.681 σ^0.5)(β + 0.1)}/(192 + 0.2595 σ)`;
//!   heat sink `ρ_b Σ_i f_i Σ_j f_ij e^{-138/σ_ij} (250 + 1116 M_ij)`; `R_0 = I_R ξ / heat sink`.
//! - Wind `φ_w = C U^B (β/β_op)^-E` (U midflame, ft/min), slope `φ_s = 5.275 β^-0.3 tan²θ`;
//!   `R = R_0 (1 + φ_E)`, where `φ_E` is `φ_w + φ_s` when the wind blows upslope and, in
//!   general, the length of the sum of the two vectors (BehavePlus); the effective wind speed is
//!   the wind that alone gives `φ_E`.
//! - With the wind limit, the effective wind is capped at `0.9 I_R` (ft/min) and `φ_E`
//!   recomputed from the cap.
//! - Length-to-width ratio `0.936 e^{0.1147 U} + 0.461 e^{-0.0692 U} - 0.397`, U the effective
//!   wind in mi/h, at most 8 (Anderson 1983, as BehavePlus uses it).

use crate::fuels::{
    EFFECTIVE_MINERAL, FuelModel, HEAT_CONTENT_BTU_LB, PARTICLE_DENSITY_LB_FT3, SAV_10H, SAV_100H,
    TOTAL_MINERAL,
};

/// Metres in a foot.
pub const M_PER_FT: f64 = 0.3048;
/// ft/min in one mi/h.
pub const FT_MIN_PER_MPH: f64 = 88.0;
/// Largest length-to-width ratio of the spread ellipse.
pub const MAX_LENGTH_TO_WIDTH: f64 = 8.0;

/// Fuel moisture contents, fractions of dry weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moisture {
    pub dead_1h: f64,
    pub dead_10h: f64,
    pub dead_100h: f64,
    pub live_herb: f64,
    pub live_woody: f64,
}

impl Moisture {
    /// From percentages in the order 1-h, 10-h, 100-h, live herbaceous, live woody.
    pub fn from_percent(p: [f64; 5]) -> Self {
        Moisture {
            dead_1h: p[0] / 100.0,
            dead_10h: p[1] / 100.0,
            dead_100h: p[2] / 100.0,
            live_herb: p[3] / 100.0,
            live_woody: p[4] / 100.0,
        }
    }
}

impl Default for Moisture {
    /// 6, 7, 8 % dead, 60 % herbaceous, 90 % woody: a dry summer day.
    fn default() -> Self {
        Moisture::from_percent([6.0, 7.0, 8.0, 60.0, 90.0])
    }
}

/// One fuel particle class of a fuel bed.
#[derive(Debug, Clone, Copy)]
struct Particle {
    load: f64,
    sav: f64,
    moisture: f64,
}

/// A fuel model at given moistures: everything that does not depend on wind or slope.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FuelBed {
    /// Characteristic SAV σ, 1/ft.
    pub sigma: f64,
    /// Packing ratio β.
    pub packing_ratio: f64,
    /// Optimum packing ratio β_op.
    pub optimum_packing_ratio: f64,
    /// Bulk density ρ_b, lb/ft³.
    pub bulk_density: f64,
    /// Dead fuel moisture of extinction, fraction.
    pub dead_extinction: f64,
    /// Live fuel moisture of extinction, fraction (0 when the model has no live fuel).
    pub live_extinction: f64,
    /// Reaction intensity I_R, BTU/ft²/min.
    pub reaction_intensity: f64,
    /// Propagating flux ratio ξ.
    pub propagating_flux: f64,
    /// Heat sink ρ_b ε Q_ig, BTU/ft³.
    pub heat_sink: f64,
    /// No-wind, no-slope rate of spread R_0, ft/min.
    pub r0: f64,
    /// Flame residence time 384/σ, min.
    pub residence_time: f64,
    wind_c: f64,
    wind_b: f64,
    wind_e: f64,
}

impl FuelBed {
    /// The fuel bed of `model` at `moisture`.
    pub fn new(model: &FuelModel, moisture: &Moisture) -> FuelBed {
        let dead = [
            Particle {
                load: model.dead_load[0],
                sav: model.sav_1h,
                moisture: moisture.dead_1h,
            },
            Particle {
                load: model.dead_load[1],
                sav: SAV_10H,
                moisture: moisture.dead_10h,
            },
            Particle {
                load: model.dead_load[2],
                sav: SAV_100H,
                moisture: moisture.dead_100h,
            },
        ];
        let live = [
            Particle {
                load: model.herb_load,
                sav: model.sav_live,
                moisture: moisture.live_herb,
            },
            Particle {
                load: model.woody_load,
                sav: model.sav_live,
                moisture: moisture.live_woody,
            },
        ];
        let dead_extinction = model.dead_extinction;
        let live_extinction = live_extinction(&dead, &live, dead_extinction);
        let classes = [
            Category::new(&dead, dead_extinction),
            Category::new(&live, live_extinction),
        ];

        let total_area: f64 = classes.iter().map(|c| c.area).sum();
        let total_load: f64 = dead.iter().chain(&live).map(|p| p.load).sum();
        let bulk_density = total_load / model.depth_ft;
        let packing_ratio = bulk_density / PARTICLE_DENSITY_LB_FT3;

        let mut sigma = 0.0;
        let mut heat_sink = 0.0;
        let mut weighted_reaction = 0.0;
        for class in &classes {
            if total_area > 0.0 {
                let f_i = class.area / total_area;
                sigma += f_i * class.sigma;
                heat_sink += f_i * class.heat_sink;
            }
            weighted_reaction += class.net_load * HEAT_CONTENT_BTU_LB * class.eta_m * class.eta_s;
        }
        heat_sink *= bulk_density;

        if sigma <= 0.0 || packing_ratio <= 0.0 {
            return FuelBed::inert(dead_extinction);
        }
        let optimum_packing_ratio = 3.348 * sigma.powf(-0.8189);
        let relative = packing_ratio / optimum_packing_ratio;
        let a = 133.0 * sigma.powf(-0.7913);
        let sigma_15 = sigma.powf(1.5);
        let gamma_max = sigma_15 / (495.0 + 0.0594 * sigma_15);
        let gamma = gamma_max * relative.powf(a) * (a * (1.0 - relative)).exp();
        let reaction_intensity = gamma * weighted_reaction;
        let propagating_flux = ((0.792 + 0.681 * sigma.sqrt()) * (packing_ratio + 0.1)).exp()
            / (192.0 + 0.2595 * sigma);
        let r0 = if heat_sink > 0.0 {
            reaction_intensity * propagating_flux / heat_sink
        } else {
            0.0
        };
        FuelBed {
            sigma,
            packing_ratio,
            optimum_packing_ratio,
            bulk_density,
            dead_extinction,
            live_extinction,
            reaction_intensity,
            propagating_flux,
            heat_sink,
            r0,
            residence_time: 384.0 / sigma,
            wind_c: 7.47 * (-0.133 * sigma.powf(0.55)).exp(),
            wind_b: 0.02526 * sigma.powf(0.54),
            wind_e: 0.715 * (-3.59e-4 * sigma).exp(),
        }
    }

    /// A bed that does not burn.
    fn inert(dead_extinction: f64) -> FuelBed {
        FuelBed {
            sigma: 0.0,
            packing_ratio: 0.0,
            optimum_packing_ratio: 0.0,
            bulk_density: 0.0,
            dead_extinction,
            live_extinction: 0.0,
            reaction_intensity: 0.0,
            propagating_flux: 0.0,
            heat_sink: 0.0,
            r0: 0.0,
            residence_time: 0.0,
            wind_c: 0.0,
            wind_b: 1.0,
            wind_e: 0.0,
        }
    }

    /// Heat per unit area `I_R · t_r`, BTU/ft².
    pub fn heat_per_unit_area(&self) -> f64 {
        self.reaction_intensity * self.residence_time
    }

    /// Wind factor φ_w for a midflame wind of `wind_ft_min`.
    pub fn wind_factor(&self, wind_ft_min: f64) -> f64 {
        if wind_ft_min <= 0.0 || self.sigma <= 0.0 {
            return 0.0;
        }
        self.wind_c * wind_ft_min.powf(self.wind_b) * self.relative_packing().powf(-self.wind_e)
    }

    /// Slope factor φ_s for a slope whose tangent (rise over run) is `tan_slope`.
    pub fn slope_factor(&self, tan_slope: f64) -> f64 {
        if self.packing_ratio <= 0.0 {
            return 0.0;
        }
        5.275 * self.packing_ratio.powf(-0.3) * tan_slope * tan_slope
    }

    /// The wind speed (ft/min) whose wind factor alone is `phi`.
    pub fn effective_wind(&self, phi: f64) -> f64 {
        if phi <= 0.0 || self.wind_c <= 0.0 {
            return 0.0;
        }
        (phi * self.relative_packing().powf(self.wind_e) / self.wind_c).powf(1.0 / self.wind_b)
    }

    fn relative_packing(&self) -> f64 {
        self.packing_ratio / self.optimum_packing_ratio
    }

    /// Head fire with a midflame wind of `wind_ft_min` blowing straight upslope on a slope of
    /// tangent `tan_slope` (the `fire-front ros` case).
    pub fn head_upslope(&self, wind_ft_min: f64, tan_slope: f64, wind_limit: bool) -> Spread {
        self.spread([0.0, wind_ft_min], [0.0, tan_slope], wind_limit)
    }

    /// Head fire for a midflame `wind` vector (ft/min, pointing where the wind blows to) and the
    /// elevation `gradient` (rise over run; points upslope, its length is the slope's tangent),
    /// both in the same horizontal frame. The heading is the direction of the sum of the wind and
    /// slope vectors (BehavePlus), or +y when neither acts.
    pub fn spread(&self, wind: [f64; 2], gradient: [f64; 2], wind_limit: bool) -> Spread {
        let wind_speed = wind[0].hypot(wind[1]);
        let tan_slope = gradient[0].hypot(gradient[1]);
        let phi_w = self.wind_factor(wind_speed);
        let phi_s = self.slope_factor(tan_slope);
        // φ_w and φ_s as vectors along the wind and up the slope.
        let along = |v: [f64; 2], len: f64, phi: f64| {
            if len > 0.0 {
                [v[0] / len * phi, v[1] / len * phi]
            } else {
                [0.0, 0.0]
            }
        };
        let w = along(wind, wind_speed, phi_w);
        let s = along(gradient, tan_slope, phi_s);
        let sum = [w[0] + s[0], w[1] + s[1]];
        let mut phi_e = sum[0].hypot(sum[1]);
        let heading = if phi_e > 0.0 {
            [sum[0] / phi_e, sum[1] / phi_e]
        } else {
            [0.0, 1.0]
        };
        let mut effective_wind = self.effective_wind(phi_e);
        let limit = 0.9 * self.reaction_intensity;
        let wind_limited = wind_limit && effective_wind > limit;
        if wind_limited {
            effective_wind = limit;
            phi_e = self.wind_factor(limit);
        }
        Spread {
            r0_ft_min: self.r0,
            ros_ft_min: self.r0 * (1.0 + phi_e),
            heading,
            effective_wind_ft_min: effective_wind,
            phi_w,
            phi_s,
            length_to_width: length_to_width(effective_wind / FT_MIN_PER_MPH),
            wind_limited,
        }
    }
}

/// Per life category (dead or live) sums of Rothermel's weighted quantities.
#[derive(Debug)]
struct Category {
    /// Total surface area `A_i` (per unit bed area).
    area: f64,
    /// `Σ f_ij σ_ij`.
    sigma: f64,
    /// `Σ f_ij e^{-138/σ_ij} Q_ig,ij` (before the bulk density).
    heat_sink: f64,
    /// Net load `Σ g_ij w_ij (1 - S_T)`.
    net_load: f64,
    eta_m: f64,
    eta_s: f64,
}

impl Category {
    fn new(particles: &[Particle], extinction: f64) -> Category {
        let areas: Vec<f64> = particles
            .iter()
            .map(|p| p.sav * p.load / PARTICLE_DENSITY_LB_FT3)
            .collect();
        let area: f64 = areas.iter().sum();
        if area <= 0.0 {
            return Category {
                area: 0.0,
                sigma: 0.0,
                heat_sink: 0.0,
                net_load: 0.0,
                eta_m: 0.0,
                eta_s: 0.0,
            };
        }
        let f: Vec<f64> = areas.iter().map(|a| a / area).collect();
        let mut sigma = 0.0;
        let mut heat_sink = 0.0;
        let mut moisture = 0.0;
        let mut net_load = 0.0;
        for (j, p) in particles.iter().enumerate() {
            sigma += f[j] * p.sav;
            moisture += f[j] * p.moisture;
            if p.sav > 0.0 {
                heat_sink += f[j] * (-138.0 / p.sav).exp() * (250.0 + 1116.0 * p.moisture);
            }
            // g_ij: the summed f of all particles in the same size class as j.
            let class = size_class(p.sav);
            let g: f64 = particles
                .iter()
                .zip(&f)
                .filter(|(q, _)| class.is_some() && size_class(q.sav) == class)
                .map(|(_, f)| f)
                .sum();
            net_load += g * p.load * (1.0 - TOTAL_MINERAL);
        }
        let r = if extinction > 0.0 {
            moisture / extinction
        } else {
            1.0
        };
        let eta_m = if r >= 1.0 {
            0.0
        } else {
            1.0 - 2.59 * r + 5.11 * r * r - 3.52 * r * r * r
        };
        Category {
            area,
            sigma,
            heat_sink,
            net_load,
            eta_m,
            eta_s: (0.174 * EFFECTIVE_MINERAL.powf(-0.19)).min(1.0),
        }
    }
}

/// BehavePlus's SAV size classes for the net-load weights; `None` below 16/ft.
fn size_class(sav: f64) -> Option<u8> {
    [1200.0, 192.0, 96.0, 48.0, 16.0]
        .iter()
        .position(|&bound| sav >= bound)
        .map(|i| i as u8)
}

/// Albini's (1976) live fuel moisture of extinction; 0 when there is no live fuel.
fn live_extinction(dead: &[Particle], live: &[Particle], dead_extinction: f64) -> f64 {
    let fine = |p: &Particle, k: f64| {
        if p.sav > 0.0 {
            p.load * (-k / p.sav).exp()
        } else {
            0.0
        }
    };
    let fine_live: f64 = live.iter().map(|p| fine(p, 500.0)).sum();
    if fine_live <= 0.0 {
        return 0.0;
    }
    let fine_dead: f64 = dead.iter().map(|p| fine(p, 138.0)).sum();
    let dead_moisture = if fine_dead > 0.0 {
        dead.iter()
            .map(|p| fine(p, 138.0) * p.moisture)
            .sum::<f64>()
            / fine_dead
    } else {
        0.0
    };
    let ratio = fine_dead / fine_live;
    (2.9 * ratio * (1.0 - dead_moisture / dead_extinction) - 0.226).max(dead_extinction)
}

/// The head fire: its rate, direction, and the shape of the spread ellipse.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// No-wind, no-slope rate R_0, ft/min.
    pub r0_ft_min: f64,
    /// Head fire rate of spread, ft/min.
    pub ros_ft_min: f64,
    /// Unit vector of the direction of maximum spread.
    pub heading: [f64; 2],
    /// Effective wind speed, ft/min.
    pub effective_wind_ft_min: f64,
    /// Wind factor φ_w.
    pub phi_w: f64,
    /// Slope factor φ_s.
    pub phi_s: f64,
    /// Length-to-width ratio of the spread ellipse.
    pub length_to_width: f64,
    /// Whether the wind limit capped the effective wind.
    pub wind_limited: bool,
}

impl Spread {
    /// Eccentricity of the spread ellipse.
    pub fn eccentricity(&self) -> f64 {
        let lw = self.length_to_width;
        (1.0 - 1.0 / (lw * lw)).max(0.0).sqrt()
    }

    /// Backing rate of spread `R (1 - e)/(1 + e)`, ft/min.
    pub fn backing_ft_min(&self) -> f64 {
        let e = self.eccentricity();
        self.ros_ft_min * (1.0 - e) / (1.0 + e)
    }

    /// Flanking rate of spread (half the ellipse's width per unit time), ft/min.
    pub fn flanking_ft_min(&self) -> f64 {
        (self.ros_ft_min + self.backing_ft_min()) / (2.0 * self.length_to_width)
    }

    /// Head rate, m/min.
    pub fn ros_m_min(&self) -> f64 {
        self.ros_ft_min * M_PER_FT
    }
}

/// Length-to-width ratio of the fire ellipse for an effective wind of `effective_wind_mph`.
pub fn length_to_width(effective_wind_mph: f64) -> f64 {
    let u = effective_wind_mph.max(0.0);
    let lw = 0.936 * (0.1147 * u).exp() + 0.461 * (-0.0692 * u).exp() - 0.397;
    lw.clamp(1.0, MAX_LENGTH_TO_WIDTH)
}

#[cfg(test)]
mod tests;
