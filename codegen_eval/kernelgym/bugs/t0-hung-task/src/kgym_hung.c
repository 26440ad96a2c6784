// SPDX-License-Identifier: GPL-2.0
/* a configuration register protected by a mutex */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>


static DEFINE_MUTEX(kgym_lock);
static int kgym_reg;

static ssize_t kgym_hung_write(struct file *file, const char __user *ubuf,
			       size_t len, loff_t *off)
{
	int v, err;

	err = kstrtoint_from_user(ubuf, len, 10, &v);
	if (err)
		return err;
	mutex_lock(&kgym_lock);
	if (v < 0)
		return -EINVAL;
	kgym_reg = v;
	pr_info("kgym_hung: reg %d\n", kgym_reg);
	mutex_unlock(&kgym_lock);
	return len;
}

static const struct proc_ops kgym_hung_ops = {
	.proc_write = kgym_hung_write,
};

static int __init kgym_hung_init(void)
{
	if (!proc_create("kgym_hung", 0222, NULL, &kgym_hung_ops))
		return -ENOMEM;
	return 0;
}

static void __exit kgym_hung_exit(void)
{
	remove_proc_entry("kgym_hung", NULL);
}

module_init(kgym_hung_init);
module_exit(kgym_hung_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kernel-gym bundled bug: kgym_hung");
